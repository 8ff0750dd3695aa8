import { describe, expect, it } from "vitest";
import { LeanHeaders } from "./lean-headers.ts";

// LeanHeaders stands in for WHATWG Headers on the lean path: each case runs the same
// operations on both and compares what they answer.

const sorted = (h: Iterable<[string, string]>) => [...h].sort(([a], [b]) => a.localeCompare(b));

describe("LeanHeaders", () => {
  it("answers as Headers does for the operations metadata uses", () => {
    const init = { "X-Request-Id": " r-1 ", traceparent: "00-abc-def-01" };
    const lean = new LeanHeaders(init);
    const real = new Headers(init);
    for (const h of [lean, real]) {
      h.append("grpc-trace", "a");
      h.append("Grpc-Trace", "b");
      h.set("Authorization", "Bearer t");
      h.delete("TRACEPARENT");
    }
    for (const name of [
      "x-request-id",
      "X-REQUEST-ID",
      "grpc-trace",
      "authorization",
      "traceparent",
      "nope",
    ]) {
      expect(lean.get(name)).toBe(real.get(name));
      expect(lean.has(name)).toBe(real.has(name));
    }
    expect(sorted(lean)).toEqual(sorted(real));
    expect(sorted(new Headers(lean))).toEqual(sorted(real));
    expect(sorted(new LeanHeaders(real))).toEqual(sorted(real));
    expect(
      sorted(
        new LeanHeaders([
          ["a", "1"],
          ["A", "2"],
        ]),
      ),
    ).toEqual(
      sorted(
        new Headers([
          ["a", "1"],
          ["A", "2"],
        ]),
      ),
    );
  });

  it("refuses invalid names and values as Headers does", () => {
    const lean = new LeanHeaders();
    const real = new Headers();
    for (const [name, value] of [
      ["bad name", "v"],
      ["", "v"],
      ["x-ok", "line\r\nbreak"],
      ["x-ok", "nul\0"],
    ] as const) {
      expect(() => real.set(name, value)).toThrow(TypeError);
      expect(() => lean.set(name, value)).toThrow(TypeError);
      expect(() => lean.append(name, value)).toThrow(TypeError);
    }
    expect(() => new LeanHeaders([["only-name"]] as unknown as [string, string][])).toThrow(TypeError);
  });

  it("reads a received HTTP/2 header block without its pseudo-headers", () => {
    const lean = LeanHeaders.fromIncoming({
      ":path": "/a.B/C",
      ":method": "POST",
      "content-type": "application/grpc",
      "x-many": ["1", "2"],
      "grpc-timeout": "5m",
    });
    expect(lean.has(":path")).toBe(false);
    expect(lean.get("x-many")).toBe("1, 2");
    expect(lean.get("Content-Type")).toBe("application/grpc");
    const out: Record<string, string> = {};
    lean.copyInto(out);
    expect(out).toEqual({ "content-type": "application/grpc", "x-many": "1, 2", "grpc-timeout": "5m" });
    const seen: string[] = [];
    lean.forEach((v, k) => {
      seen.push(`${k}=${v}`);
    });
    expect(seen).toHaveLength(3);
    expect([...lean.keys()]).toEqual(["content-type", "x-many", "grpc-timeout"]);
    expect([...lean.values()]).toEqual(["application/grpc", "1, 2", "5m"]);
  });

  it("reads a received block in place and copies it on the first change, leaving it as it was", () => {
    const raw = { ":path": "/a.B/C", authorization: "Bearer t", "x-many": ["1", "2"] };
    const lean = LeanHeaders.fromIncoming(raw);
    expect(lean.get("Authorization")).toBe("Bearer t");
    expect(lean.has(":path")).toBe(false);
    expect(lean.get(":path")).toBeNull();
    expect(lean.has("toString")).toBe(false);
    expect(lean.get("x-many")).toBe("1, 2");
    lean.set("traceparent", "00-abc-def-01");
    lean.delete("authorization");
    expect(lean.get("authorization")).toBeNull();
    expect(lean.get("x-many")).toBe("1, 2");
    expect(lean.get("traceparent")).toBe("00-abc-def-01");
    expect(raw).toEqual({ ":path": "/a.B/C", authorization: "Bearer t", "x-many": ["1", "2"] });
  });
});
