"""Tests of extraction-assets, laid out as the package is."""
