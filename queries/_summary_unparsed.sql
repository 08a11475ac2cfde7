-- name: _summary_unparsed
-- description: the three inputs with most unparsed lines, named by `forensics summary`
-- inputs: files
-- parameters: none
-- columns:
--   path: the input file
--   unparsed_lines: its lines in the unparsed table
--   lines: its lines
SELECT path, unparsed_lines, lines FROM files WHERE unparsed_lines > 0 ORDER BY unparsed_lines DESC, path LIMIT 3
