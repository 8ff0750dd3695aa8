import catalogue from "./editors.json" with { type: "json" };

/** One PDF editor of the catalogue (src/review/editors.json). */
export interface Editor {
  id: string;
  name: string;
  kind: string;
  /** Which metadata it names itself in: "creator" (Creator, XMP CreatorTool) or any writer field. */
  field?: string;
  pattern: string;
  examples: string[];
  source: string;
}

export const EDITORS: readonly (Editor & { re: RegExp })[] = (catalogue.editors as Editor[]).map((e) => ({
  ...e,
  re: new RegExp(e.pattern, "i"),
}));

/** The writer fields of a file's metadata: the Info dictionary's and the XMP packet's. */
export interface WriterFields {
  producer?: string | undefined;
  creator?: string | undefined;
  /** XMP xmp:CreatorTool, pdf:Producer and xmpMM:History software agents. */
  xmpTools?: readonly string[] | undefined;
}

/** The editor a file's metadata names, with the field and value that name it; undefined when none does. */
export function editorOf(w: WriterFields): { editor: Editor; field: string; value: string } | undefined {
  const creators: [string, string | undefined][] = [
    ["Creator", w.creator],
    ...(w.xmpTools ?? []).map((t): [string, string] => ["XMP", t]),
  ];
  const any: [string, string | undefined][] = [["Producer", w.producer], ...creators];
  for (const editor of EDITORS)
    for (const [field, value] of editor.field === "creator" ? creators : any)
      if (value && editor.re.test(value.trim())) return { editor, field, value: value.trim() };
  return undefined;
}
