-- name: excerpt
-- kind: macro
-- description: the first n characters of a text, as a report shows a long message; the named queries
--   cut with it, never with left(), so that a masked output (`--redact`) masks the whole text first and
--   cuts after: there the command's connection replaces it with one that keeps the text whole, marked
--   with its cut (forensics.catalog.connect, forensics.reports.redact). No derived view reads it: a
--   snapshot must not depend on how one command masks.
-- inputs: none
-- parameters:
--   s VARCHAR: the text
--   n BIGINT: how many characters are kept
-- returns: VARCHAR: the text's first n characters (NULL for NULL)

CREATE OR REPLACE MACRO excerpt(s, n) AS left(s, n);
