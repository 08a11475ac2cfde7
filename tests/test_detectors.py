"""One test per signature S1-S16: positives, and the hard negatives that must stay clean."""

import pytest

from forensics.analysis import detectors as d
from forensics.core.turns import Turn
from tests.corpus.texts import CLEAN_CHINESE, CLEAN_MARKUP_DISCUSSION, CLEAN_QUOTED_ERRORS, CLEAN_TABLES, EOS, FW, LB, D


def turn(
    content="",
    reasoning="",
    calls=(),
    finish="stop",
    model="deepseek-v3.2",
    completion=40,
    status=None,
    error=None,
    offered=None,
    tools=True,
    user=None,
):
    return Turn(
        source="t",
        session_id="s",
        turn_id="x",
        source_file="f",
        content=content,
        reasoning=reasoning,
        tool_calls=list(calls),
        finish_reason=finish,
        model=model,
        completion_tokens=completion,
        http_status=status,
        error_text=error,
        offered_tools=offered,
        tools_offered=tools,
        user_text=user,
    )


BLOCK = (
    f'<{D}function_calls>\n<{D}invoke name="read">\n<{D}parameter name="path" string="true">a.py</{D}parameter>\n'
    f"</{D}invoke>\n</{D}function_calls>"
)
CALL = {"id": "c1", "name": "read", "arguments": '{"path": "a.py"}'}


def test_s1_dsml_in_content():
    assert d.s1_dsml_in_content(turn("Reading.\n\n" + BLOCK)).sig == "S1"
    deg = d.s1_dsml_in_content(turn('Reading.\n\n<|DSML|function_calls>\n<|DSML|invoke name="read">'))
    assert deg and deg.degraded
    assert d.s1_dsml_in_content(turn('x < | DSML | invoke name="grep">')).degraded
    # a real tool call beside the markup is not a leak by S1's definition
    assert d.s1_dsml_in_content(turn("Reading.\n\n" + BLOCK, calls=[CALL])) is None
    # markup inside fences or inline code is talked about, not emitted
    for text in CLEAN_MARKUP_DISCUSSION:
        assert d.s1_dsml_in_content(turn(text)) is None, text[:60]
    # an ASCII pipe table that merely mentions DSML is not a degraded marker
    assert d.s1_dsml_in_content(turn("| format | marker |\n|---|---|\n| V3.2 | DSML |")) is None


def test_s2_dsml_in_reasoning():
    assert d.s2_dsml_in_reasoning(turn("", reasoning="I will read it.\n" + BLOCK)).sig == "S2"
    assert d.s2_dsml_in_reasoning(turn("", reasoning=f'<{D}invoke name="ls">')).sig == "S2"
    assert d.s2_dsml_in_reasoning(turn("", reasoning="The DSML format wraps calls in a block.")) is None
    assert d.s2_dsml_in_reasoning(turn("", reasoning="It looks like `<｜DSML｜invoke name=...>`.")) is None


def test_s3_unbalanced_dsml():
    h = d.s3_unbalanced_dsml(turn(BLOCK.rsplit("\n", 1)[0]))
    assert h.sig == "S3" and "wrapper: 1 open, 0 closed" in h.note
    assert "truncated" in d.s3_unbalanced_dsml(turn(BLOCK.rsplit("\n", 2)[0], finish="length")).note
    assert d.s3_unbalanced_dsml(turn(BLOCK)) is None
    # a fenced block shown while talking about the format is a quote; a fenced call with no such talk is a leak
    fenced = "```\n" + BLOCK.rsplit("\n", 1)[0] + "\n```"
    assert d.s3_unbalanced_dsml(turn("A truncated DSML call looks like this:\n\n" + fenced)) is None
    assert d.s3_unbalanced_dsml(turn("Reading the config now.\n\n" + fenced)) is not None
    assert d.s3_unbalanced_dsml(turn(fenced, user="Show me an unterminated DSML block.")) is None


def test_s4_bare_invoke():
    bare = f'<{D}invoke name="Bash">\n<{D}parameter name="command" string="true">ls</{D}parameter>\n</{D}invoke>'
    assert d.s4_bare_invoke(turn(bare)).sig == "S4"
    assert d.s4_bare_invoke(turn(BLOCK)) is None
    assert d.s4_bare_invoke(turn("no markup here")) is None


def test_s5_wrong_dialect():
    v31 = (
        f"<{FW}tool{LB}calls{LB}begin{FW}><{FW}tool{LB}call{LB}begin{FW}>read<{FW}tool{LB}sep{FW}>{{}}"
        f"<{FW}tool{LB}call{LB}end{FW}><{FW}tool{LB}calls{LB}end{FW}>"
    )
    assert d.s5_wrong_dialect(turn(v31, model="deepseek-v3.2")).sig == "S5"
    assert (
        d.s5_wrong_dialect(turn(BLOCK.replace("function_calls", "tool_calls"), model="DeepSeek-V3.2-Exp")).sig == "S5"
    )
    assert d.s5_wrong_dialect(turn(BLOCK, model="deepseek-v4-flash")).sig == "S5"
    # the deployment's own dialect, or an unknown deployment, is no mismatch
    assert d.s5_wrong_dialect(turn(v31, model="deepseek-v3.1-terminus")) is None
    assert d.s5_wrong_dialect(turn(BLOCK, model="deepseek-v3.2")) is None
    assert d.s5_wrong_dialect(turn(v31, model="my-model")) is None
    assert d.expected_dialect("deepseek-r1") == "v3" and d.expected_dialect("DeepSeek-V4-Pro") == "dsml_v4"


def test_s6_malformed_param():
    assert (
        "marker"
        in d.s6_malformed_param(turn(f'<{D}invoke name="x">\n<parameter name="enabled">true</{D}parameter>')).note
    )
    assert (
        "without string="
        in d.s6_malformed_param(turn(f'<{D}invoke name="x">\n<{D}parameter name="a">1</{D}parameter>')).note
    )
    assert 'string="yes"' in d.s6_malformed_param(turn(f'<{D}parameter name="a" string="yes">1</{D}parameter>')).note
    assert d.s6_malformed_param(turn(BLOCK)) is None
    # XML in ordinary prose, without any DSML around, is not a DSML parameter
    assert d.s6_malformed_param(turn('Use <parameter name="x"> in the WSDL file.')) is None


def test_s7_special_token_leak():
    assert d.s7_special_token_leak(turn("All done." + EOS)).sig == "S7"
    assert d.s7_special_token_leak(turn(f"<{FW}User{FW}>thanks")).sig == "S7"
    assert d.s7_special_token_leak(turn("<function_results>\n<result>ok</result>")).sig == "S7"
    assert "tool token" in d.s7_special_token_leak(turn(f"x <{FW}tool{LB}calls{LB}begin{FW}>")).note
    deg = d.s7_special_token_leak(turn("done <|end_of_sentence|>"))
    assert deg and deg.degraded
    assert d.s7_special_token_leak(turn("The `<result>` wrapper and the " + f"`{EOS}` token.")) is None
    assert d.s7_special_token_leak(turn("The <result> tag wraps each tool result.")) is None


def test_s8_think_tag_leak():
    assert d.s8_think_tag_leak(turn("</think>The answer is 4.")).sig == "S8"
    assert d.s8_think_tag_leak(turn("ok", reasoning="a</think>b</think>")).sig == "S8"
    assert d.s8_think_tag_leak(turn("DeepSeek puts reasoning in `<think>` blocks.")) is None
    assert d.s8_think_tag_leak(turn('The "</think>" string closes reasoning.')) is None
    assert d.s8_think_tag_leak(turn("Wrap it in <think> tags.")) is None


def test_s9_all_reasoning():
    assert d.s9_all_reasoning(turn("", reasoning="I should read the file.")).sig == "S9"
    assert d.s9_all_reasoning(turn("", reasoning="I should read the file.", tools=False)) is None
    assert d.s9_all_reasoning(turn("Answer.", reasoning="I should read the file.")) is None
    assert d.s9_all_reasoning(turn("", reasoning="thinking", finish="length")) is None


def test_s10_finish_mismatch():
    assert "no tool call" in d.s10_finish_mismatch(turn("", finish="tool_calls")).note
    assert "S1" in d.s10_finish_mismatch(turn(BLOCK)).note
    assert d.s10_finish_mismatch(turn("", calls=[CALL], finish="tool_calls")) is None
    assert d.s10_finish_mismatch(turn(BLOCK, finish="length")) is None


def test_s11_bad_tool_args():
    offered = [{"name": "read", "required": ["path"]}]
    assert "not JSON" in d.s11_bad_tool_args(turn(calls=[{"name": "read", "arguments": '{"path": "a.py"'}])).note
    assert "not JSON" in d.s11_bad_tool_args(turn(calls=[{"name": "read", "arguments": '{{"path"}'}])).note
    assert (
        "not an offered" in d.s11_bad_tool_args(turn(calls=[{"name": "rm", "arguments": "{}"}], offered=offered)).note
    )
    assert (
        "missing path" in d.s11_bad_tool_args(turn(calls=[{"name": "read", "arguments": "{}"}], offered=offered)).note
    )
    assert d.s11_bad_tool_args(turn(calls=[CALL], offered=offered)) is None
    assert d.s11_bad_tool_args(turn(calls=[{"name": "read", "arguments": {"path": "a"}}])) is None


def test_s12_repetition_loop():
    assert d.s12_repetition_loop(turn("The patch applies cleanly. " * 12)).sig == "S12"
    assert d.s12_repetition_loop(turn("Let me look. " + "!" * 300)).sig == "S12"
    assert d.s12_repetition_loop(turn("I will now read the file.\n" * 6)).sig == "S12"
    looping = (
        "Here is what I found while reading the scheduler code and the decode worker this afternoon.\n"
        + "Retrying the request against decode-3 after the timeout.\n" * 5
    )
    assert "line repeated 5 times" in d.s12_repetition_loop(turn(looping)).note
    assert "distinct words" in d.s12_repetition_loop(turn("but but but about you about you about you " * 6)).note
    assert (
        "stuttered"
        in d.s12_repetition_loop(
            turn("the the the prefill server server server sends sends sends the cache to decode")
        ).note
    )
    for text in CLEAN_TABLES:  # repeated table rows are data, not a loop
        assert d.s12_repetition_loop(turn(text)) is None, text[:50]
    assert d.s12_repetition_loop(turn("```\n" + "ok\n" * 40 + "```\nAll passes.")) is None
    assert d.s12_repetition_loop(turn("| a | b |\n|---|---|\n" + "| x | 0 |\n" * 30)) is None
    assert d.s12_repetition_loop(turn("-" * 300 + "\nA separator line is not a loop of words.")) is None
    report = "".join(
        f"## Step {i}\nWe changed module {i} to read settings lazily.\n**Result:** passed.\n\n" for i in range(6)
    )
    assert d.s12_repetition_loop(turn(report)) is None


def test_s13_script_switch():
    assert d.s13_script_switch(turn("The decode server waits to be separable by常规? and retries.")).sig == "S13"
    assert d.s13_script_switch(turn("The server restarts and затем the requests are retried.")).sig == "S13"
    assert d.s13_script_switch(turn("我们需要检查配置文件 the value of the key is not set 然后重新启动。")).sig == "S13"
    assert (
        d.s13_script_switch(
            turn("Das ist gut, aber the заголовок 设置 wird nicht gespeichert, потому что 缓存 ist alt.")
        ).sig
        == "S13"
    )
    for text in CLEAN_CHINESE:  # Chinese replies naming Latin terms are ordinary
        assert d.s13_script_switch(turn(text)) is None, text[:30]
    assert d.s13_script_switch(turn('The word "你好" means hello.')) is None
    assert d.s13_script_switch(turn("The delay is 5 μs and Δt grows.")) is None
    # the user asked in Chinese: a mixed answer is expected
    assert d.s13_script_switch(turn("Use the 配置 file.", user="配置在哪里？")) is None


def test_s14_token_salad():
    assert "U+FFFD" in d.s14_token_salad(turn("The loader ret\ufffdurns the dict.")).note
    assert "U+0007" in d.s14_token_salad(turn("bell \x07 here")).note
    salad = "ins 3 Q / kv . ,, rt o e 7 ] ] x q zz . p l / 3Q ins ; ; k v 9 # w xx y . . 0 f ll q u j vv ins 3 Q / e e"
    assert d.s14_token_salad(turn(salad)).sig == "S14"
    # vocabulary fragments strewn among short common words (the shape of vllm#480's reply, docs/formats/TRANSCRIPTS.md, "Corrupted replies reported in public")
    mixed = (
        "I will look at the scheduler now. of Q it e / to x , is a to 3 it Q , of e you / x it is - a of e "
        "to ins Q , it x / to of e is"
    )
    assert d.s14_token_salad(turn(mixed)).sig == "S14"
    prose = (
        "It is up to us to do so, as we go on: if it is ok by me, I do it at 10 am or so, and we see if it is "
        "in or on the list. We go by the plan."
    )
    assert d.s14_token_salad(turn(prose)) is None
    assert d.s14_token_salad(turn("Changed files:\n" + "".join(f"- src/m{i}.py: 3 lines\n" for i in range(20)))) is None
    for text in CLEAN_CHINESE + CLEAN_QUOTED_ERRORS:
        assert d.s14_token_salad(turn(text)) is None, text[:30]


def test_s14_entropy_outliers_need_a_baseline():
    base = [
        turn(
            "The config is loaded twice, once at import time and once in main; the second load overrides the "
            f"environment, which is why the flag seems ignored. Case {i}, checked and fixed; the test now sets the variable "
            "and reads the flag back."
        )
        for i in range(11)
    ]
    odd = turn("q" * 120 + "zx" * 60)
    assert 11 in d.entropy_outliers(base + [odd])
    assert d.entropy_outliers(base[:5] + [odd]) == {}  # fewer than 10 turns of baseline: no verdict
    chinese = turn(CLEAN_CHINESE[6] * 2)
    assert d.entropy_outliers(base + [chinese]) == {}  # another script is not compared


def test_s15_empty_turn():
    assert d.s15_empty_turn(turn("", completion=120)).sig == "S15"
    assert d.s15_empty_turn(turn("", completion=0)) is None
    assert d.s15_empty_turn(turn("", calls=[CALL], finish="tool_calls")) is None
    assert d.s15_empty_turn(turn("Done.")) is None
    # a generated output with no metadata at all: the empty text is the evidence
    assert d.s15_empty_turn(turn("  \n", finish=None, completion=None)).sig == "S15"
    assert d.s15_empty_turn(turn("", finish=None, completion=None, error="MessageAbortedError")) is None


def test_s16_transfer_error_turn():
    assert d.s16_transfer_error_turn(turn(status=500, error="Internal Server Error")).sig == "S16"
    assert (
        d.s16_transfer_error_turn(turn(status=503, error="KVTransferError(bootstrap_room=1): timed out")).sig == "S16"
    )
    assert d.s16_transfer_error_turn(turn("partial", finish="abort")).sig == "S16"
    assert d.s16_transfer_error_turn(turn(status=429, error="rate limited")) is None
    # quoting the error in a reply is not a failed request
    for text in CLEAN_QUOTED_ERRORS:
        assert d.s16_transfer_error_turn(turn(text)) is None


@pytest.mark.parametrize("sig", sorted(d.SIGNATURES, key=lambda s: int(s[1:])))
def test_every_signature_is_documented(sig):
    fn = d.SIGNATURES[sig]
    assert fn.__doc__ and fn.__doc__.startswith(sig), fn.__name__


def test_config_class_needs_every_tool_call_to_leak_from_the_start():
    leak = turn("Reading.\n\n" + BLOCK, model="sglang-default")
    ok = turn("", calls=[CALL], finish="tool_calls", model="sglang-default")
    text = turn("The answer is 4.", model="sglang-default")
    assert [v.corruption_class for v in d.assess_session([leak, text, leak, leak])] == [
        "config",
        "clean",
        "config",
        "config",
    ]
    # a working session with a leak under load: the leak is corruption, not a configuration problem
    assert [v.corruption_class for v in d.assess_session([ok, leak, ok])] == ["clean", "parse_leak", "clean"]
    assert [v.corruption_class for v in d.assess_session([leak])] == ["parse_leak"]


def test_class_precedence_and_evidence():
    v = d.assess_session([turn("x " + BLOCK + " \x1b[31m", status=500, error="KVTransferError(bootstrap_room=1)")])[0]
    assert v.corruption_class == "transfer_error" and not v.corrupted
    v = d.assess_session([turn("Reading.\n\n" + BLOCK.rsplit("\n", 1)[0] + "\n\x1b]0;pwned\x07")])[0]
    assert (
        v.corruption_class == "parse_leak"
        and v.corrupted
        and v.signatures == ["S1", "S3", "S10", "S14"]
        or v.corruption_class == "incoherent"
    )
    assert "⟦" in v.evidence and "\x1b" not in v.evidence and "\x07" not in v.evidence


def test_quoted_mask_blanks_machine_text_and_keeps_offsets():
    text = (
        "The decode side logged:\n\n> [2026-10-30 09:17:05 DP0 TP0] Decode transfer failed for request rank=1 "
        "decode_req.req.rid='7f3c1e9a2b4d4e0f8a6b5c4d3e2f1a0b'\n\nSee `conn.py:611` and /var/log/sglang/decode.log "
        "for room 6593551520068383758.\n\n  host      ready   restarts\n  decode-1  1/1     0\n  decode-2  0/1     7\n"
    )
    masked = d.quoted_mask(text)
    assert len(masked) == len(text) and masked.count("\n") == text.count("\n")
    assert "Decode transfer failed" not in masked and "conn.py" not in masked and "decode-2" not in masked
    assert "/var/log" not in masked and "restarts" not in masked
    assert "The decode side logged:" in masked and "See" in masked and "for room" in masked
    # salad has no structure to mask
    salad = "ins 3 Q / kv . ,, rt o e 7 ] ] x q zz . p l / 3Q ins ; ; k v 9 # w xx"
    assert d.quoted_mask(salad) == salad


def test_s14_entropy_does_not_judge_a_quoted_log_line():
    base = [
        turn(
            "The config is loaded twice, once at import time and once in main; the second load overrides the "
            f"environment, which is why the flag seems ignored. Case {i}, checked and fixed; the test now sets the variable "
            "and reads the flag back."
        )
        for i in range(11)
    ]
    quoting = turn(
        "Found it. The decode side logged this at 09:17:05, right when your client got the 500:\n\n"
        "> Decode transfer failed for request rank=1 decode_req.req.rid='7f3c1e9a2b4d4e0f8a6b5c4d3e2f1a0b' "
        "decode_req.req.bootstrap_room=4793981895866140836 with exception KVTransferError(bootstrap_room="
        "4793981895866140836): Request 4793981895866140836 timed out after 300.0s in KVPoll.WaitingForInput\n\n"
        "So the decode worker waited the full 300 s for the KV cache and never got it."
    )
    assert d.entropy_outliers(base + [quoting]) == {}
    assert d.assess_session(base + [quoting])[-1].corruption_class == "clean"


def test_fenced_dsml_is_a_quote_only_when_markup_is_talked_about():
    fenced = "```\n" + BLOCK + "\n```"
    assert d.s1_dsml_in_content(turn("Let me check the pods first.\n\n" + fenced)).sig == "S1"
    assert d.s1_dsml_in_content(turn("When the parser fails the block stays in content:\n\n" + fenced)) is None
    assert d.s1_dsml_in_content(turn(fenced, user="What does a leaked tool call look like?")) is None
    # inline code and ASCII look-alikes in a fence are always quotes
    assert d.s1_dsml_in_content(turn("Reading `" + BLOCK.split("\n")[0] + "` now.")) is None
    assert d.s1_dsml_in_content(turn('Reading now.\n\n```\n<|DSML|invoke name="read">\n```')) is None


def test_s12_finds_loops_the_masking_would_hide():
    code_loop = "The fix:\n\n```python\n" + "    t = start_thread()\n" * 12 + "```\n"
    assert "back to back" in d.s12_repetition_loop(turn(code_loop)).note
    pasted = "The warning repeats:\n\n" + "WARNING: Retrying KV transfer for room 1 (peer not ready)\n" * 5
    assert d.s12_repetition_loop(turn(pasted)) is None
    long_unit = "Here is the log excerpt and my reading of it. " + "The prefill side never sent the cache. " * 6
    assert "sentence repeated" in d.s12_repetition_loop(turn(long_unit)).note
