import { createMiddleware } from "hono/factory";
import type { EdgeEnv } from "../env.ts";
import { ApiError } from "../errors.ts";
import { secretsEqual } from "../keys.ts";

/**
 * Guards the admin API with `Authorization: Bearer <ADMIN_TOKEN>`, compared in constant
 * time. Missing, malformed and wrong tokens all get the same 401.
 */
export const adminAuth = (adminToken: string) =>
  createMiddleware<EdgeEnv>(async (c, next) => {
    const header = c.req.header("authorization") ?? "";
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!match || !secretsEqual(match[1]!, adminToken)) {
      throw new ApiError(401, "unauthorized", "a valid admin bearer token is required", undefined);
    }
    await next();
  });
