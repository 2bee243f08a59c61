"""What a document's items carry besides their text: Word comments as comments (not speaker
notes), on files built here with python-docx."""

from __future__ import annotations

import io

from extraction_assets.pipeline import run_pipeline


def _run(data: bytes) -> dict:
    return run_pipeline(data, filename="document", count_tokens=lambda t: len(t.split()),
                        max_tokens=200, min_tokens=20)


def commented_docx() -> bytes:
    """A Word file of two sections: a paragraph with Kim's comment and a table whose cell has
    Lee's comment, then a paragraph with an anonymous comment."""
    import docx

    document = docx.Document()
    document.add_heading("Pump review", 1)
    paragraph = document.add_paragraph("The impeller was replaced in March.")
    document.add_comment(paragraph.runs, text="Check the invoice number first.", author="Kim",
                         initials="K")
    table = document.add_table(rows=2, cols=2)
    for (r, c), text in {(0, 0): "Part", (0, 1): "Cost", (1, 0): "Seal", (1, 1): "85"}.items():
        table.cell(r, c).text = text
    document.add_comment(table.cell(1, 1).paragraphs[0].runs, text="Price from the 2023 list.",
                         author="Lee")
    document.add_heading("Next steps", 1)
    paragraph = document.add_paragraph("Order a spare.")
    document.add_comment(paragraph.runs, text="Two spares, not one.", author="")
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def test_word_comments_follow_the_text_they_annotate_not_speaker_notes():
    tables = _run(commented_docx())
    items = [(b["sheet_name"], b["a1_range"], b["text"], b["heading_path"])
             for b in tables["blocks"].to_pylist() if b["kind"] == "text"]
    assert items == [
        ("Pump review", "A2", "The impeller was replaced in March.", ["Pump review"]),
        ("Pump review", "A3", "Comment by Kim: Check the invoice number first.",
         ["Pump review"]),
        ("Next steps", "A2", "Order a spare.", ["Next steps"]),
        ("Next steps", "A3", "Comment: Two spares, not one.", ["Next steps"]),
        # a table cell's comment: Docling keeps no item it annotates
        ("Comments", "A1", "Comment by Lee: Price from the 2023 list.", ["Comments"])]
    details = {o["text"]: o["details"] for o in tables["sheet_objects"].to_pylist()
               if '"comment"' in (o["details"] or "")}
    kim = details["Comment by Kim: Check the invoice number first."]
    assert '"author": "Kim"' in kim and '"initials": "K"' in kim and '"time": "' in kim
    chunks = tables["chunks"].to_pylist()
    assert not any("Speaker notes" in c["heading_path"] or "Speaker notes" in c["text"]
                   for c in chunks)
    assert any("Comment by Kim" in c["text"] and c["heading_path"] == ["Pump review"]
               for c in chunks)
