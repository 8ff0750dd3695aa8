/**
 * Which implementation carries the internal gRPC hop, for measuring one against the
 * other in the same tree (issue 31): `own` (@gw/grpc-transport, the default) or
 * `grpc-js` (@grpc/grpc-js on both sides). Read once, from `GW_RPC_WIRE`, by every
 * process that starts a server or a client, so one variable switches the whole stack.
 */
export type RpcWire = "own" | "grpc-js";

function parseWire(value: string | undefined): RpcWire {
  if (value === undefined || value === "" || value === "own") return "own";
  if (value === "grpc-js") return "grpc-js";
  throw new Error(`GW_RPC_WIRE must be "own" or "grpc-js", not "${value}"`);
}

/** The wire of this process. */
export const RPC_WIRE: RpcWire = parseWire(process.env.GW_RPC_WIRE);
