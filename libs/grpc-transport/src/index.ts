export {
  createFastUnaryHandler,
  type FastUnaryOptions,
  MAX_MESSAGE_BYTES,
  recordUnaryRoutes,
  toHeaders,
  type UnaryRoute,
} from "./fast-server.ts";
export { createFastGrpcTransport, type FastTransport, type FastTransportOptions } from "./fast-transport.ts";
export { LeanHeaders } from "./lean-headers.ts";
