/**
 * The server side of the lean unary gRPC path: unary calls answered straight from
 * `node:http2` streams, without connect-node's chains of async iterables. It speaks
 * plain gRPC (length-prefixed protobuf, `grpc-status` trailers, `grpc-timeout`,
 * `grpc-status-details-bin`) and runs the same connect interceptors; everything it does
 * not handle (streaming methods, JSON, compressed requests, unknown paths) is left to
 * connect-node's adapter. See docs/architecture.md, "The internal gRPC hop".
 */
import type * as http2 from "node:http2";
import {
  create,
  type DescMessage,
  type DescMethod,
  type DescMethodUnary,
  type DescService,
  fromBinary,
  type MessageShape,
  toBinary,
} from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  type ConnectRouter,
  type ContextValues,
  createContextValues,
  type HandlerContext,
  type Interceptor,
  type UnaryRequest,
  type UnaryResponse,
} from "@connectrpc/connect";
import { setTrailerStatus } from "@connectrpc/connect/protocol-grpc";
import { encodeGrpcMessage, MAX_TIMER_MS, parseGrpcTimeout } from "./grpc-wire.ts";
import { LeanHeaders } from "./lean-headers.ts";

type UnaryImpl = (req: unknown, ctx: HandlerContext) => unknown;

/** A unary method the lean path serves, keyed by its gRPC path `/<package.Service>/<Method>`. */
export interface UnaryRoute {
  service: DescService;
  method: DescMethodUnary;
  impl: UnaryImpl;
}

/** The largest message either side of the lean path accepts (connect-node has no limit). */
export const MAX_MESSAGE_BYTES = 64 * 1024 * 1024;

const GRPC_TYPES = new Set(["application/grpc", "application/grpc+proto"]);

/**
 * Wraps a ConnectRouter so that every unary method registered on it is also recorded
 * for the lean path. The router still gets every registration: connect-node keeps
 * serving what the lean path leaves to it. Registrations with per-service handler
 * options stay with connect-node alone, since those options only apply there.
 */
export function recordUnaryRoutes(router: ConnectRouter, into: Map<string, UnaryRoute>): ConnectRouter {
  const record = (service: DescService, method: DescMethod, impl: unknown, self: unknown) => {
    if (method.methodKind !== "unary" || typeof impl !== "function") return;
    into.set(`/${service.typeName}/${method.name}`, {
      service,
      method: method as DescMethodUnary,
      impl: (req, ctx) => impl.call(self, req, ctx),
    });
  };
  const recording: ConnectRouter = {
    get handlers() {
      return router.handlers;
    },
    service(service, implementation, options) {
      router.service(service, implementation, options);
      if (options === undefined) {
        const impl = implementation as Record<string, unknown>;
        for (const method of service.methods) record(service, method, impl[method.localName], impl);
      }
      return recording;
    },
    rpc(method, impl, options) {
      router.rpc(method, impl, options);
      if (options === undefined) record(method.parent, method, impl, undefined);
      return recording;
    },
  };
  return recording;
}

export interface FastUnaryOptions {
  /** Connect interceptors, outermost first, applied to every call as connect-node does. */
  interceptors: Interceptor[];
}

/**
 * Returns a `stream` handler that serves the recorded unary routes and answers false
 * for a stream it leaves alone (to be handed to connect-node).
 */
export function createFastUnaryHandler(
  routes: Map<string, UnaryRoute>,
  options: FastUnaryOptions,
): (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders) => boolean {
  const { interceptors } = options;
  return (stream, headers) => {
    const route = routes.get(headers[":path"] ?? "");
    if (route === undefined || headers[":method"] !== "POST") return false;
    const type = headers["content-type"];
    if (type === undefined || !GRPC_TYPES.has(type)) return false;
    const encoding = headers["grpc-encoding"];
    if (encoding !== undefined && encoding !== "identity") return false;
    serve(route, stream, headers, interceptors);
    return true;
  };
}

/** Aborts a handler's signal when its call ended normally; made once, so no stack per call. */
const CALL_ENDED = new ConnectError("the call ended", Code.Canceled);

/** One unary call: read the request, run the interceptors and handler, answer once. */
class UnaryCall implements HandlerContext {
  readonly service: DescService;
  readonly method: DescMethodUnary;
  readonly requestMethod = "POST";
  readonly protocolName = "grpc";
  readonly #stream: http2.ServerHttp2Stream;
  readonly #headers: http2.IncomingHttpHeaders;
  #deadline: number | undefined;
  #timer: NodeJS.Timeout | undefined;
  #controller: AbortController | undefined;
  /** Why the call ended before the handler answered (deadline, or the peer went away). */
  #endedBy: ConnectError | undefined;
  #answered = false;
  #requestHeader: Headers | undefined;
  #responseHeader: Headers | undefined;
  #responseTrailer: Headers | undefined;
  #values: ContextValues | undefined;

  constructor(route: UnaryRoute, stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders) {
    this.service = route.service;
    this.method = route.method;
    this.#stream = stream;
    this.#headers = headers;
  }

  get url(): string {
    return `http://${this.#headers[":authority"] ?? "localhost"}${this.#headers[":path"] ?? ""}`;
  }

  /** Created on first use: most handlers never look at it. */
  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController();
      if (this.#endedBy !== undefined) this.#controller.abort(this.#endedBy);
      else if (this.#answered) this.#controller.abort(CALL_ENDED);
    }
    return this.#controller.signal;
  }

  timeoutMs(): number | undefined {
    return this.#deadline === undefined ? undefined : this.#deadline - Date.now();
  }

  get requestHeader(): Headers {
    this.#requestHeader ??= LeanHeaders.fromIncoming(this.#headers);
    return this.#requestHeader;
  }

  get responseHeader(): Headers {
    this.#responseHeader ??= new LeanHeaders();
    return this.#responseHeader;
  }

  get responseTrailer(): Headers {
    this.#responseTrailer ??= new LeanHeaders();
    return this.#responseTrailer;
  }

  get values(): ContextValues {
    this.#values ??= createContextValues();
    return this.#values;
  }

  /** Starts the deadline; a bad grpc-timeout is answered at once (the body is then ignored). */
  start(): void {
    const raw = this.#headers["grpc-timeout"];
    if (raw === undefined) return;
    // Any deadline a client asks for, as connect-node by default.
    const timeoutMs = parseGrpcTimeout(Array.isArray(raw) ? (raw[0] ?? "") : raw);
    if (timeoutMs instanceof ConnectError) {
      this.fail(timeoutMs);
      return;
    }
    this.#deadline = Date.now() + timeoutMs;
    if (timeoutMs > MAX_TIMER_MS) return;
    this.#timer = setTimeout(
      () => this.#end(new ConnectError("the operation timed out", Code.DeadlineExceeded)),
      timeoutMs,
    );
  }

  /** The peer reset the stream or the session went away before the answer. */
  peerGone(): void {
    if (!this.#answered) this.#end(new ConnectError("the client closed the call", Code.Canceled), false);
  }

  /** The handler's time is up or the caller left: abort its signal and stop waiting for it. */
  #end(reason: ConnectError, answer = true): void {
    if (this.#answered) return;
    this.#endedBy = reason;
    if (answer) this.fail(reason);
    else this.#finish();
    this.#controller?.abort(reason);
  }

  #finish(): void {
    this.#answered = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    if (this.#endedBy === undefined && this.#controller !== undefined) this.#controller.abort(CALL_ENDED);
  }

  async run(body: Buffer, interceptors: Interceptor[], impl: UnaryImpl): Promise<void> {
    if (this.#answered) return;
    let input: MessageShape<DescMessage>;
    try {
      input = parseRequest(this.method, body);
    } catch (err) {
      this.fail(err);
      return;
    }
    try {
      let output: MessageShape<DescMessage>;
      if (interceptors.length === 0) {
        output = create(this.method.output, (await impl(input, this)) as MessageShape<DescMessage>);
      } else {
        const res = await intercepted(this, interceptors, impl)(this.#request(input));
        output = res.message;
      }
      this.succeed(output);
    } catch (err) {
      this.fail(err);
    }
  }

  #request(message: MessageShape<DescMessage>): UnaryRequest {
    const call = this;
    return {
      stream: false,
      service: this.service,
      method: this.method,
      requestMethod: "POST",
      message,
      get url() {
        return call.url;
      },
      get signal() {
        return call.signal;
      },
      get header() {
        return call.requestHeader;
      },
      get contextValues() {
        return call.values;
      },
    };
  }

  succeed(message: MessageShape<DescMessage>): void {
    if (this.#answered) return;
    const bytes = toBinary(this.method.output, message);
    if (bytes.length > MAX_MESSAGE_BYTES) {
      this.fail(
        new ConnectError(
          `message size ${bytes.length} is larger than ${MAX_MESSAGE_BYTES}`,
          Code.ResourceExhausted,
        ),
      );
      return;
    }
    this.#finish();
    const stream = this.#stream;
    if (stream.destroyed || stream.closed) return;
    const frame = Buffer.allocUnsafe(5 + bytes.length);
    frame[0] = 0;
    frame.writeUInt32BE(bytes.length, 1);
    frame.set(bytes, 5);
    const trailers: http2.OutgoingHttpHeaders = { "grpc-status": "0" };
    if (this.#responseTrailer !== undefined) copyInto(trailers, this.#responseTrailer);
    try {
      stream.respond(this.#responseHeaders(), { waitForTrailers: true });
      stream.once("wantTrailers", () => {
        // An event handler must not throw (it would end the process): the stream may
        // have been closed with its session since the check.
        if (stream.destroyed || stream.closed) return;
        try {
          stream.sendTrailers(trailers);
        } catch {
          // As below.
        }
      });
      stream.end(frame);
    } catch {
      // The stream went away between the check and the write: nobody is listening.
    }
  }

  /** Answers an error as a trailers-only response, as any gRPC server may. */
  fail(reason: unknown): void {
    if (this.#answered) return;
    this.#finish();
    const stream = this.#stream;
    if (stream.destroyed || stream.closed || stream.headersSent) return;
    const error =
      reason instanceof ConnectError
        ? reason
        : new ConnectError("internal error", Code.Internal, undefined, undefined, reason);
    const status = new Headers();
    if (this.#responseTrailer !== undefined) for (const [k, v] of this.#responseTrailer) status.set(k, v);
    setTrailerStatus(status, error);
    status.set("grpc-message", encodeGrpcMessage(error.rawMessage));
    const headers = this.#responseHeaders();
    copyInto(headers, status);
    try {
      stream.respond(headers, { endStream: true });
    } catch {
      // As in succeed().
    }
  }

  #responseHeaders(): http2.OutgoingHttpHeaders {
    const headers: http2.OutgoingHttpHeaders = {
      ":status": 200,
      "content-type": "application/grpc+proto",
    };
    if (this.#responseHeader !== undefined) copyInto(headers, this.#responseHeader);
    return headers;
  }
}

function serve(
  route: UnaryRoute,
  stream: http2.ServerHttp2Stream,
  headers: http2.IncomingHttpHeaders,
  interceptors: Interceptor[],
): void {
  const call = new UnaryCall(route, stream, headers);
  const chunks: Buffer[] = [];
  let size = 0;
  let tooLarge = false;
  stream.on("data", (chunk: Buffer) => {
    if (tooLarge) return;
    size += chunk.length;
    if (size > MAX_MESSAGE_BYTES + 5) {
      tooLarge = true;
      call.fail(new ConnectError(`message larger than ${MAX_MESSAGE_BYTES} bytes`, Code.ResourceExhausted));
      return;
    }
    chunks.push(chunk);
  });
  stream.on("end", () => {
    if (tooLarge) return;
    const body = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size);
    void call.run(body, interceptors, route.impl);
  });
  stream.on("close", () => call.peerGone());
  // A reset stream also emits 'close'; without a listener an 'error' would throw.
  stream.on("error", () => {});
  call.start();
}

/** The one message of a unary request, as connect-node would accept or refuse it. */
function parseRequest(method: DescMethodUnary, body: Buffer): MessageShape<DescMessage> {
  if (body.length === 0)
    throw new ConnectError("protocol error: missing input message for unary method", Code.Unimplemented);
  if (body.length < 5) throw new ConnectError("protocol error: incomplete envelope", Code.InvalidArgument);
  const flags = body[0] ?? 0;
  const length = body.readUInt32BE(1);
  if (body.length < 5 + length)
    throw new ConnectError("protocol error: incomplete envelope", Code.InvalidArgument);
  if (body.length > 5 + length)
    throw new ConnectError(
      "protocol error: received extra input message for unary method",
      Code.Unimplemented,
    );
  if ((flags & 0b1) !== 0)
    throw new ConnectError("received compressed envelope, but do not know how to decompress", Code.Internal);
  try {
    return fromBinary(method.input, body.subarray(5));
  } catch (err) {
    throw new ConnectError(
      `parse binary: ${err instanceof Error ? err.message : String(err)}`,
      Code.Internal,
    );
  }
}

/** The interceptor chain around the handler, outermost first (as connect applies them). */
function intercepted(
  ctx: UnaryCall,
  interceptors: Interceptor[],
  impl: UnaryImpl,
): (req: UnaryRequest) => Promise<UnaryResponse> {
  const inner = async (req: UnaryRequest | { stream: true }): Promise<UnaryResponse> => {
    const message = create(
      ctx.method.output,
      (await impl((req as UnaryRequest).message, ctx)) as MessageShape<DescMessage>,
    );
    return {
      stream: false,
      service: ctx.service,
      method: ctx.method,
      message,
      get header() {
        return ctx.responseHeader;
      },
      get trailer() {
        return ctx.responseTrailer;
      },
    };
  };
  let next = inner as Parameters<Interceptor>[0];
  for (let i = interceptors.length - 1; i >= 0; i--) next = (interceptors[i] as Interceptor)(next);
  return next as (req: UnaryRequest) => Promise<UnaryResponse>;
}

/** Received headers as `Headers` (a LeanHeaders), without HTTP/2 pseudo-headers. */
export function toHeaders(raw: http2.IncomingHttpHeaders): Headers {
  return LeanHeaders.fromIncoming(raw);
}

function copyInto(target: http2.OutgoingHttpHeaders, source: Headers): void {
  for (const [key, value] of source) target[key] = value;
}
