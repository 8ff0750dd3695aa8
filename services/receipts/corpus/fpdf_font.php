<?php
// Makes FPDF's font definitions (Windows-1251) for a TrueType font, in the current directory.
// Usage: php fpdf_font.php font.ttf
require '/usr/share/php/fpdf/makefont/makefont.php';
MakeFont($argv[1], 'cp1251');
