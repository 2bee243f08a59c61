"""Formulas: the references each one reads (:mod:`.refs`, for the ``formula_refs`` view) and
the values of those stored without a cached value (:mod:`.evaluate`)."""
