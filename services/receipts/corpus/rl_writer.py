# ReportLab (Debian's python3-reportlab) writes one receipt: argv[1] is a JSON list of
# placed texts {text, x, y, size, bold, grey} (points, origin top-left), argv[2] the output.
import json
import sys

from reportlab.pdfbase import pdfmetrics
from reportlab.pdfbase.ttfonts import TTFont
from reportlab.pdfgen import canvas

pdfmetrics.registerFont(TTFont("DejaVu", "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"))
pdfmetrics.registerFont(TTFont("DejaVu-Bold", "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf"))
items = json.load(open(sys.argv[1], encoding="utf-8"))
c = canvas.Canvas(sys.argv[2], pagesize=(420, 640))
c.setTitle("Квитанция")
for p in items:
    c.setFont("DejaVu-Bold" if p["bold"] else "DejaVu", p["size"])
    c.setFillGray(0.47 if p["grey"] else 0)
    c.drawString(p["x"], 640 - p["y"], p["text"])
c.showPage()
c.save()
