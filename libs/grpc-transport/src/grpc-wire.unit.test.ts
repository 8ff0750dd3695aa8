import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { codeFromHttpStatus, encodeGrpcMessage, parseGrpcTimeout } from "./grpc-wire.ts";

describe("parseGrpcTimeout", () => {
  it("reads every unit of the gRPC spec", () => {
    expect(parseGrpcTimeout("2H")).toBe(7_200_000);
    expect(parseGrpcTimeout("3M")).toBe(180_000);
    expect(parseGrpcTimeout("4S")).toBe(4_000);
    expect(parseGrpcTimeout("250m")).toBe(250);
    expect(parseGrpcTimeout("1500u")).toBe(1.5);
    expect(parseGrpcTimeout("2000000n")).toBe(2);
    expect(parseGrpcTimeout("99999999H")).toBe(99_999_999 * 3_600_000);
  });

  it("refuses anything else with INVALID_ARGUMENT", () => {
    for (const bad of ["", "1", "m", "123456789m", "1.5S", "-1S", "1s", " 1S", "1S ", "1D"]) {
      const got = parseGrpcTimeout(bad);
      expect(got, bad).toBeInstanceOf(ConnectError);
      expect((got as ConnectError).code).toBe(Code.InvalidArgument);
      expect((got as ConnectError).rawMessage).toBe(`protocol error: invalid grpc timeout value: ${bad}`);
    }
  });
});

describe("codeFromHttpStatus", () => {
  it("maps HTTP statuses as gRPC's http-grpc-status-mapping says", () => {
    const table: [number, Code][] = [
      [400, Code.Internal],
      [401, Code.Unauthenticated],
      [403, Code.PermissionDenied],
      [404, Code.Unimplemented],
      [429, Code.Unavailable],
      [502, Code.Unavailable],
      [503, Code.Unavailable],
      [504, Code.Unavailable],
      [200, Code.Unknown],
      [500, Code.Unknown],
      [418, Code.Unknown],
    ];
    for (const [status, code] of table) expect(codeFromHttpStatus(status), String(status)).toBe(code);
  });
});

describe("encodeGrpcMessage", () => {
  it("percent-encodes only bytes outside printable ASCII, and the percent sign", () => {
    expect(encodeGrpcMessage("not found: a/b?c, d=e")).toBe("not found: a/b?c, d=e");
    expect(encodeGrpcMessage("100% ok")).toBe("100%25 ok");
    expect(encodeGrpcMessage("Größe\tü")).toBe("Gr%C3%B6%C3%9Fe%09%C3%BC");
    expect(encodeGrpcMessage("")).toBe("");
  });

  it("is undone by decodeURIComponent (connect) and decodeURI (grpc-js)", () => {
    for (const m of ["ключ: 100% / ✓ 🚀", "a,b:c;d@e&f=g+h$i#j", "\u0001\n"]) {
      expect(decodeURIComponent(encodeGrpcMessage(m))).toBe(m);
      expect(decodeURI(encodeGrpcMessage(m))).toBe(m);
    }
  });
});
