"""Bounded fuzzing: mutated bytes and XML of valid workbooks either read or fail with a typed
:class:`ExtractionError` — never another exception, never a hang."""

from __future__ import annotations

import io
import zipfile

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from extraction_assets.app.samples import SAMPLES, workbook_bytes
from extraction_assets.core.errors import ExtractionError
from extraction_assets.pipeline import StageError
from extraction_assets.pipeline.stages import normalize_stage, parse_stage, segment_stage

H = "0" * 64
SEEDS = {name: workbook_bytes(build()) for name, build in SAMPLES.items()}
FUZZ = settings(max_examples=60, deadline=10_000, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow])


def _run(data: bytes) -> None:
    try:
        parsed = parse_stage(H, data).tables
    except StageError as exc:
        assert isinstance(exc.error, ExtractionError) and exc.error.message
        return
    normalized = normalize_stage(H, parsed["parsed_cells"], parsed["parsed_sheets"],
                                 parsed["styles"], parsed["workbook_properties"]).tables
    segment_stage(H, normalized["cells"], normalized["sheets"])


@settings(FUZZ, max_examples=300)
@given(name=st.sampled_from(sorted(SEEDS)), data=st.data())
def test_flipped_bytes(name, data):
    raw = bytearray(SEEDS[name])
    for _ in range(data.draw(st.integers(1, 8))):
        at = data.draw(st.integers(0, len(raw) - 1))
        raw[at] = data.draw(st.integers(0, 255))
    _run(bytes(raw))


@FUZZ
@given(name=st.sampled_from(sorted(SEEDS)), cut=st.floats(0.0, 1.0))
def test_truncated(name, cut):
    raw = SEEDS[name]
    _run(raw[: int(len(raw) * cut)])


def _rezip(raw: bytes, part: str, mutate) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(raw)) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            content = src.read(info)
            dst.writestr(info, mutate(content) if info.filename == part else content)
    return out.getvalue()


XML_PARTS = ["xl/worksheets/sheet1.xml", "xl/sharedStrings.xml", "xl/styles.xml",
             "xl/workbook.xml", "[Content_Types].xml", "xl/_rels/workbook.xml.rels"]
SNIPPETS = ["<", ">", "&", "&amp;", '"', "</c>", "<c r=\"A1\">", "<v>1e309</v>", "<v>-1</v>",
            't="s"', "<mergeCell ref=\"A1:XFD1048576\"/>", "\x00", "\ufffe", "<!-- x -->",
            "<![CDATA[ ]]>", 'r="ZZZZ9"', 's="99999"', "<f t=\"shared\" si=\"0\"/>"]


@FUZZ
@given(name=st.sampled_from(sorted(SEEDS)), part=st.sampled_from(XML_PARTS), data=st.data())
def test_mutated_xml(name, part, data):
    def mutate(content: bytes) -> bytes:
        text = bytearray(content)
        for _ in range(data.draw(st.integers(1, 4))):
            at = data.draw(st.integers(0, max(len(text) - 1, 0)))
            snippet = data.draw(st.sampled_from(SNIPPETS)).encode("utf-8", "surrogatepass")
            if data.draw(st.booleans()):
                text[at:at] = snippet
            else:
                del text[at: at + data.draw(st.integers(1, 40))]
        return bytes(text)

    if part not in zipfile.ZipFile(io.BytesIO(SEEDS[name])).namelist():
        return
    _run(_rezip(SEEDS[name], part, mutate))
