/** What reading a PDF's text produces, shared by the parser and the text reader it loads. */

/** A text fragment as placed on the page (PDF coordinates, origin bottom-left). */
export interface TextItem {
  x: number;
  y: number;
  str: string;
  /** Advance width in page units (0 when unknown). */
  w?: number | undefined;
}

export interface PdfInfo {
  producer?: string | undefined;
  creator?: string | undefined;
  creationDate?: string | undefined;
  modDate?: string | undefined;
  /** The writer names of the XMP packet (xmp:CreatorTool, pdf:Producer, history agents). */
  xmpTools?: string[] | undefined;
}

/** What the worker answers. */
export type WorkerAnswer =
  | { kind: "ok"; pageCount: number; info: PdfInfo; pages: TextItem[][] }
  | { kind: "unreadable"; detail: string }
  | { kind: "too_many_pages"; pages: number };
