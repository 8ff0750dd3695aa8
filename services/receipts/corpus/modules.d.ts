// The corpus's writers from npm that ship no types: only what corpus/writers.ts calls.
declare module "pdfkit" {
  interface PDFKitDocument {
    on(event: "data", listener: (chunk: Buffer) => void): this;
    on(event: "end", listener: () => void): this;
    font(path: string): this;
    fontSize(size: number): this;
    fillColor(color: string): this;
    text(text: string, x: number, y: number, options?: { lineBreak?: boolean }): this;
    end(): void;
  }
  const PDFKit: new (options: {
    size: [number, number];
    margin: number;
    info?: Record<string, string>;
  }) => PDFKitDocument;
  export default PDFKit;
}

declare module "pdfmake" {
  const pdfmake: {
    setFonts(fonts: Record<string, Record<string, string>>): void;
    setUrlAccessPolicy(policy: (url: string) => boolean): void;
    createPdf(doc: unknown): { getBuffer(): Promise<Buffer> };
  };
  export default pdfmake;
}
