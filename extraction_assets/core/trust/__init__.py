"""Trust features, pure and offline: redaction of cell text (:mod:`.redact`), colour legends
and their meanings (:mod:`.colour`), a second, independent read of a workbook's values
(:mod:`.dual_read`) and the header-row detector seam (:mod:`.headers`)."""
