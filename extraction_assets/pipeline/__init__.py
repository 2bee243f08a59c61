"""The stages as plain functions over Arrow tables (:mod:`.stages`), the stage registry and
:func:`run_pipeline` (:mod:`.registry`), the table schemas (:mod:`.schemas`), the codecs between
the model and the tables (:mod:`.codecs`) and the checks the assets report (:mod:`.checks`)."""

from extraction_assets.pipeline.registry import (
    PIPELINE_ASSETS,
    STAGE,
    STAGES,
    RunSettings,
    Stage,
    run_pipeline,
)
from extraction_assets.pipeline.stages import StageError, StageOutput

__all__ = ["PIPELINE_ASSETS", "STAGE", "STAGES", "RunSettings", "Stage", "StageError",
           "StageOutput", "run_pipeline"]
