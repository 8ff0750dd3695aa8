<?php
// FPDF (Debian's php-fpdf, the PHP library many back ends print documents with): writes
// the placed text of a receipt (JSON from corpus/writers.ts) as FPDF does, a TrueType
// font embedded in the Windows-1251 encoding (FPDF 1.8 has no Unicode: "₽" becomes "руб.").
// Usage: php fpdf_writer.php placed.json out.pdf fontdir
[$_, $placed, $out, $fontdir] = $argv;
define('FPDF_FONTPATH', $fontdir . '/');
require '/usr/share/php/fpdf/fpdf.php';

$cp = fn (string $s) => iconv('UTF-8', 'CP1251//TRANSLIT', strtr($s, [
  '₽' => 'руб.', "\u{2011}" => '-', "\u{202f}" => ' ', "\u{2007}" => ' ',
]));
$pdf = new FPDF('P', 'pt', [420, 640]);
$pdf->SetAutoPageBreak(false);
$pdf->AddFont('DejaVu', '', 'DejaVuSans.php');
$pdf->AddFont('DejaVu', 'B', 'DejaVuSans-Bold.php');
$pdf->SetTitle('Квитанция', true);
$pdf->AddPage();
foreach (json_decode(file_get_contents($placed), true) as $p) {
  $pdf->SetFont('DejaVu', $p['bold'] ? 'B' : '', $p['size']);
  $pdf->SetTextColor($p['grey'] ? 119 : 0);
  $pdf->Text($p['x'], $p['y'], $cp($p['text']));
}
$pdf->Output('F', $out);
