"""forensics: offline post-mortems of LLM serving incidents (SGLang PD, NIXL, agent transcripts)."""

__version__ = "0.1.0"
