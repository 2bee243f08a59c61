"""Workbooks of the trust features' tests (not a test module).

* :func:`legend_workbook`: invoices whose number cells are filled red (overdue) or green
  (paid), a legend ``Status`` / red ``overdue`` / green ``paid`` beside them, and a red cell
  inside a conditional-format range (its colour is not to be trusted);
* :func:`customers_workbook`: customers with e-mail addresses, phone numbers, card numbers
  (one a valid Visa test number, one failing Luhn) and an IBAN;
* :func:`with_duplicate_cell`: a workbook whose sheet XML writes one cell twice with two
  different cached values, so two readers keep different ones.
"""

from __future__ import annotations

import io
import zipfile

from openpyxl import Workbook
from openpyxl.formatting.rule import CellIsRule
from openpyxl.styles import PatternFill

RED, GREEN, AMBER = "FF0000", "00B050", "FFC000"

#: (invoice, customer, amount, fill of the invoice cell)
INVOICES = [("INV-1001", "Acme", 1200, RED), ("INV-1002", "Globex", 850, GREEN),
            ("INV-1003", "Initech", 430, GREEN), ("INV-1004", "Umbrella", 2990, RED),
            ("INV-1005", "Hooli", 75, None)]


def solid_fill(rgb: str) -> PatternFill:
    return PatternFill("solid", start_color=f"FF{rgb}", end_color=f"FF{rgb}")


def legend_workbook() -> bytes:
    """Sheet ``Invoices``: table A1:D6 (Invoice, Customer, Amount, Due), invoice cells filled
    red or green; legend F2:G4 (``Status``, red ``overdue``, green ``paid``); D2:D6 is a
    conditional-format range, and D3 (inside it) is filled red too."""
    wb = Workbook()
    ws = wb.active
    ws.title = "Invoices"
    ws.append(["Invoice", "Customer", "Amount", "Due"])
    for i, (invoice, customer, amount, fill) in enumerate(INVOICES, start=2):
        ws.append([invoice, customer, amount, f"2024-0{i}-15"])
        if fill:
            ws.cell(i, 1).fill = solid_fill(fill)
    ws["D3"].fill = solid_fill(RED)
    ws.conditional_formatting.add("D2:D6", CellIsRule(operator="equal", formula=['"x"'],
                                                      fill=solid_fill(AMBER)))
    ws["F2"] = "Status"
    ws["F3"].fill = solid_fill(RED)
    ws["G3"] = "overdue"
    ws["F4"].fill = solid_fill(GREEN)
    ws["G4"] = "paid"
    out = io.BytesIO()
    wb.save(out)
    return out.getvalue()


#: (name, e-mail, phone, card, IBAN)
CUSTOMERS = [
    ("Ada Lovelace", "ada@example.com", "+44 20 7946 0958", "4111 1111 1111 1111",
     "GB82 WEST 1234 5698 7654 32"),
    ("Alan Turing", "alan.turing@example.org", "(555) 123-4567", "4111111111111112",
     "DE89370400440532013000"),
    ("Grace Hopper", "grace@navy.example", "555-987-6543", "5500-0000-0000-0004", "n/a"),
]


def customers_workbook() -> bytes:
    """Sheet ``Customers``: Name, E-mail, Phone, Card, IBAN, Tax ID (``TX-<n>``)."""
    wb = Workbook()
    ws = wb.active
    ws.title = "Customers"
    ws.append(["Name", "E-mail", "Phone", "Card", "IBAN", "Tax ID"])
    for n, row in enumerate(CUSTOMERS, start=1):
        ws.append([*row, f"TX-{n:04d}"])
    out = io.BytesIO()
    wb.save(out)
    return out.getvalue()


def with_duplicate_cell(data: bytes, sheet_part: str, ref: str, first: str, second: str) -> bytes:
    """``data`` with cell ``ref`` of ``sheet_part`` written twice: first with the cached value
    ``first``, then again with ``second`` (a number cell each time)."""
    src = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for item in src.infolist():
            part = src.read(item)
            if item.filename == sheet_part:
                text = part.decode()
                old = f'<c r="{ref}" t="n"><v>{first}</v></c>'
                assert old in text, old
                part = text.replace(old, old + f'<c r="{ref}" t="n"><v>{second}</v></c>').encode()
            dst.writestr(item, part)
    return out.getvalue()
