"""The stages as plain functions over Arrow tables (:mod:`.stages`), the stage registry and
:func:`run_pipeline` (:mod:`.registry`), the table schemas (:mod:`.schemas`), the codecs between
the model and the tables (:mod:`.codecs`) and the checks the assets report (:mod:`.checks`).

The names below are imported from their modules on first use (:pep:`562`): a process that only
reads the data dir needs :mod:`.schemas`, not the stages, which import SciPy and the segmenter
(~0.5 s).
"""

from importlib import import_module

#: module (under this package) of each name the package exports
_EXPORTS = {"PIPELINE_ASSETS": "registry", "STAGE": "registry", "STAGES": "registry",
            "RunSettings": "registry", "Stage": "registry", "run_pipeline": "registry",
            "StageError": "stages", "StageOutput": "stages"}

__all__ = ["PIPELINE_ASSETS", "STAGE", "STAGES", "RunSettings", "Stage", "StageError",
           "StageOutput", "run_pipeline"]


def __getattr__(name: str):
    """The exported ``name``, imported from its module."""
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{_EXPORTS[name]}"), name)
