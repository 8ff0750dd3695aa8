import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { Scalar } from "@scalar/hono-api-reference";
import { Hono } from "hono";
import type { EdgeEnv } from "../env.ts";

/**
 * `/openapi.json` and `/docs`: the API reference, rendered by Scalar from the document.
 * Scalar's standalone bundle is served from this package's own dependency
 * (`@scalar/api-reference`), never from a CDN, and the page loads no fonts from elsewhere:
 * the reference works on a machine without internet.
 */
export const SCALAR_SCRIPT_PATH = "/docs/scalar.js";

let scalarScript: Buffer | undefined;
function scalarBundle(): Buffer {
  // The package exports no path to its browser bundle: it sits beside the module entry.
  const entry = createRequire(import.meta.url).resolve("@scalar/api-reference");
  scalarScript ??= readFileSync(join(dirname(entry), "browser", "standalone.js"));
  return scalarScript;
}

export function docsRoutes(document: () => object): Hono<EdgeEnv> {
  let cached: object | undefined;
  const routes = new Hono<EdgeEnv>();
  routes.get("/openapi.json", (c) => {
    cached ??= document();
    return c.json(cached);
  });
  routes.get(SCALAR_SCRIPT_PATH, (c) => {
    c.header("Content-Type", "text/javascript; charset=utf-8");
    c.header("Cache-Control", "public, max-age=3600");
    return c.body(new Uint8Array(scalarBundle()));
  });
  routes.get(
    "/docs",
    Scalar({
      url: "/openapi.json",
      cdn: SCALAR_SCRIPT_PATH,
      pageTitle: "Payment gateway API",
      withDefaultFonts: false,
      telemetry: false,
      hideClientButton: true,
      // Nothing of Scalar's own services: no AI agent, no MCP or SDK generator, no developer tools.
      agent: { disabled: true },
      mcp: { disabled: true },
      showDeveloperTools: "never",
    }),
  );
  return routes;
}
