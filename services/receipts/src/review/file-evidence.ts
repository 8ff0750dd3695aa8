import type { PdfInfo, TextItem } from "../pdf/parse.ts";
import { describeRevisions, savesOf } from "../pdf/revisions.ts";
import type { PdfStructure } from "../pdf/structure.ts";
import { editorOf } from "./editors.ts";
import { type Finding, finding } from "./findings.ts";
import { overlaidText } from "./overlay.ts";

/** A bank writes a receipt once: creation and modification further apart than this are worth a note. */
const DATES_APART_MS = 5 * 60_000;

/**
 * What the file itself shows of an edit after the bank wrote it: a later revision that
 * changes what the page shows, objects overridden from an object stream, text typed over
 * other text, or an editing program's name in its metadata. Who wrote the file otherwise
 * (a report engine, a library, a printer, a program never seen before) and how it is
 * built are never evidence: what is merely unusual is a note.
 */
export function fileEvidence(
  structure: PdfStructure,
  info: PdfInfo,
  pages: readonly (readonly TextItem[])[],
  dates: { created?: Date | undefined; modified?: Date | undefined },
): Finding[] {
  const out: Finding[] = [];
  const { revisions, updates } = structure;
  if (updates.content.length > 0 || revisions.overriddenByStream.length > 0)
    out.push(
      finding(
        "incremental_update",
        `${describeRevisions(revisions)}; a later revision changes what the page shows: ${[
          ...updates.content.slice(0, 6),
          ...(revisions.overriddenByStream.length > 0 ? ["objects overridden from an object stream"] : []),
        ].join(", ")}`,
      ),
    );
  else if (savesOf(revisions) > 1)
    out.push(
      finding(
        "saved_again",
        `${describeRevisions(revisions)}; the later revisions change nothing on the page${updates.signed ? " (a signature)" : ""}`,
      ),
    );
  for (const place of overlaidText(pages).slice(0, 3))
    out.push(finding("text_overlaid", `text typed over other text: ${place}`));
  const editor = editorOf({ producer: info.producer, creator: info.creator, xmpTools: info.xmpTools });
  if (editor)
    out.push(
      finding(
        "editor_wrote",
        `${editor.field} "${editor.value}": ${editor.editor.name}, a PDF editor (catalogue entry ${editor.editor.id})`,
      ),
    );
  if (structure.activeContent.length > 0)
    out.push(finding("active_content", `carries ${structure.activeContent.join(", ")} (never executed)`));
  const { created, modified } = dates;
  if (created && modified && Math.abs(modified.getTime() - created.getTime()) > DATES_APART_MS)
    out.push(
      finding(
        "dates_apart",
        `created ${created.toISOString()}, modified ${modified.toISOString()} (written by "${info.producer ?? "no Producer"}")`,
      ),
    );
  return out;
}
