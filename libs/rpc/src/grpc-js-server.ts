import { createServer, type Server as NetServer, type Socket } from "node:net";
import {
  create,
  type DescMessage,
  type DescMethod,
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
  createConnectRouter,
  createContextValues,
  createMethodImplSpec,
  createServiceImplSpec,
  type HandlerContext,
  type Interceptor,
  type MethodImplSpec,
  type StreamRequest,
  type StreamResponse,
  type UnaryRequest,
  type UnaryResponse,
} from "@connectrpc/connect";
import * as grpc from "@grpc/grpc-js";
import { statusOf, toHeaders, toMetadata } from "./grpc-js-status.ts";

/** The largest message either side of the hop accepts. */
export const MAX_MESSAGE_BYTES = 64 * 1024 * 1024;

export interface GrpcJsServerOptions {
  /** Registers the handlers, as on any connect router. */
  routes: (router: ConnectRouter) => void;
  /** Connect interceptors, outermost first, around every call. */
  interceptors: Interceptor[];
  port: number;
  host: string;
  /** gRPC's MAX_CONNECTION_AGE (grpc-js adds ±10 % jitter); 0 keeps sessions for ever. */
  maxConnectionAgeMs: number;
  /** How long a session told to go away may keep its calls in flight. */
  maxConnectionAgeGraceMs: number;
  /** Called for each session closed at or past its maximum age. */
  onAged: () => void;
}

export interface GrpcJsServer {
  port: number;
  /** Stops accepting, asks every session to go away, and waits for the calls in flight. */
  close(): Promise<void>;
}

/**
 * Serves the handlers registered on a connect router with @grpc/grpc-js: each method of
 * each service becomes a grpc-js handler that runs the connect interceptors and the
 * method's implementation with a connect `HandlerContext`. Unary and server-streaming
 * methods are served (the only kinds in our protos); connections come from our own
 * listener so that TCP_NODELAY and session ages stay in our hands.
 */
export async function startGrpcJsServer(options: GrpcJsServerOptions): Promise<GrpcJsServer> {
  const server = new grpc.Server({
    "grpc.max_receive_message_length": MAX_MESSAGE_BYTES,
    "grpc.max_send_message_length": MAX_MESSAGE_BYTES,
    ...(options.maxConnectionAgeMs > 0
      ? {
          "grpc.max_connection_age_ms": options.maxConnectionAgeMs,
          "grpc.max_connection_age_grace_ms": options.maxConnectionAgeGraceMs,
        }
      : {}),
  });
  for (const [service, specs] of collectRoutes(options.routes)) {
    const definition: Record<
      string,
      grpc.MethodDefinition<MessageShape<DescMessage>, MessageShape<DescMessage>>
    > = {};
    const handlers: grpc.UntypedServiceImplementation = {};
    for (const spec of specs) {
      const { method } = spec;
      if (spec.kind !== "unary" && spec.kind !== "server_streaming") continue;
      definition[method.localName] = {
        path: `/${service.typeName}/${method.name}`,
        requestStream: false,
        responseStream: spec.kind === "server_streaming",
        requestSerialize: (m: MessageShape<DescMessage>) => asBuffer(toBinary(method.input, m)),
        requestDeserialize: (b: Buffer) => fromBinary(method.input, b),
        responseSerialize: (m: MessageShape<DescMessage>) => asBuffer(toBinary(method.output, m)),
        responseDeserialize: (b: Buffer) => fromBinary(method.output, b),
      };
      handlers[method.localName] =
        spec.kind === "unary"
          ? unaryHandler(spec, options.interceptors)
          : streamHandler(spec, options.interceptors);
    }
    server.addService(definition as grpc.ServiceDefinition, handlers);
  }
  const injector = server.createConnectionInjector(grpc.ServerCredentials.createInsecure());
  const agedAfterMs = options.maxConnectionAgeMs * 0.9;
  const listener: NetServer = createServer((socket: Socket) => {
    socket.setNoDelay(true);
    if (options.maxConnectionAgeMs > 0) {
      const opened = Date.now();
      socket.once("close", () => {
        if (Date.now() - opened >= agedAfterMs) options.onAged();
      });
    }
    injector.injectConnection(socket);
  });
  await new Promise<void>((resolve, reject) => {
    listener.once("error", reject);
    listener.listen(options.port, options.host, () => resolve());
  });
  const address = listener.address();
  const port = typeof address === "object" && address !== null ? address.port : options.port;
  return {
    port,
    async close() {
      listener.close();
      await new Promise<void>((resolve) => server.tryShutdown(() => resolve()));
    },
  };
}

type Spec = MethodImplSpec<DescMessage, DescMessage>;

/** The implementations registered by `routes`, by service, through connect's own router. */
function collectRoutes(routes: (router: ConnectRouter) => void): Map<DescService, Spec[]> {
  const collected = new Map<DescService, Spec[]>();
  const add = (service: DescService, spec: Spec) => {
    const list = collected.get(service) ?? [];
    collected.set(service, [...list.filter((s) => s.method !== spec.method), spec]);
  };
  const router = createConnectRouter();
  const recording: ConnectRouter = {
    get handlers() {
      return router.handlers;
    },
    service(service, implementation, opts) {
      router.service(service, implementation, opts);
      const spec = createServiceImplSpec(service, implementation);
      for (const method of service.methods) add(service, spec.methods[method.localName] as Spec);
      return recording;
    },
    rpc(method, impl, opts) {
      router.rpc(method, impl, opts);
      add(method.parent, createMethodImplSpec(method, impl) as Spec);
      return recording;
    },
  };
  routes(recording);
  return collected;
}

/** A Buffer over the same bytes (grpc-js wants Buffers; copying them is waste). */
function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

type ServerCall = grpc.ServerUnaryCall<unknown, unknown> | grpc.ServerWritableStream<unknown, unknown>;

/**
 * The connect context of one call. The signal and the metadata objects are made on
 * first use: most handlers never look at them.
 */
class CallContext implements HandlerContext {
  readonly requestMethod = "POST";
  readonly protocolName = "grpc";
  readonly service: DescService;
  readonly method: DescMethod;
  readonly #call: ServerCall;
  readonly #deadline: number | undefined;
  #controller: AbortController | undefined;
  #endedBy: unknown;
  #requestHeader: Headers | undefined;
  #responseHeader: Headers | undefined;
  #responseTrailer: Headers | undefined;
  #values: ContextValues | undefined;

  constructor(method: DescMethod, call: ServerCall) {
    this.service = method.parent;
    this.method = method;
    this.#call = call;
    const deadline = call.getDeadline();
    this.#deadline = deadline === Number.POSITIVE_INFINITY ? undefined : Number(deadline);
    // grpc-js ends the call itself at its deadline and when the peer goes away.
    call.once("cancelled", () =>
      this.end(
        this.#deadline !== undefined && Date.now() >= this.#deadline
          ? new ConnectError("the operation timed out", Code.DeadlineExceeded)
          : new ConnectError("the client closed the call", Code.Canceled),
      ),
    );
  }

  get url(): string {
    return `http://${this.#call.getHost()}/${this.service.typeName}/${this.method.name}`;
  }

  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController();
      if (this.#endedBy !== undefined) this.#controller.abort(this.#endedBy);
    }
    return this.#controller.signal;
  }

  timeoutMs(): number | undefined {
    return this.#deadline === undefined ? undefined : this.#deadline - Date.now();
  }

  get requestHeader(): Headers {
    this.#requestHeader ??= toHeaders(this.#call.metadata);
    return this.#requestHeader;
  }

  get responseHeader(): Headers {
    this.#responseHeader ??= new Headers();
    return this.#responseHeader;
  }

  get responseTrailer(): Headers {
    this.#responseTrailer ??= new Headers();
    return this.#responseTrailer;
  }

  get values(): ContextValues {
    this.#values ??= createContextValues();
    return this.#values;
  }

  /** The call ended (answered, cancelled or past its deadline): abort the handler's signal. */
  end(reason: unknown): void {
    if (this.#endedBy !== undefined) return;
    this.#endedBy = reason;
    this.#controller?.abort(reason);
  }

  /** Sends the response headers a handler or interceptor set, if any. */
  sendHeader(): void {
    const header = this.#responseHeader;
    if (header !== undefined && [...header.keys()].length > 0) this.#call.sendMetadata(toMetadata(header));
  }

  trailer(): grpc.Metadata | undefined {
    return this.#responseTrailer === undefined ? undefined : toMetadata(this.#responseTrailer);
  }

  trailerHeaders(): Headers | undefined {
    return this.#responseTrailer;
  }
}

/** Aborts a handler's signal when its call ended normally; made once, so no stack per call. */
const CALL_ENDED = new ConnectError("the call ended", Code.Canceled);

/** The connect interceptors around `inner`, outermost first (as connect applies them). */
function chain<T>(
  interceptors: Interceptor[],
  inner: (req: T) => Promise<unknown>,
): (req: T) => Promise<unknown> {
  let next = inner as unknown as Parameters<Interceptor>[0];
  for (let i = interceptors.length - 1; i >= 0; i--) next = (interceptors[i] as Interceptor)(next);
  return next as unknown as (req: T) => Promise<unknown>;
}

function unaryHandler(
  spec: Spec & { kind: "unary" },
  interceptors: Interceptor[],
): grpc.handleUnaryCall<unknown, unknown> {
  const { method, impl } = spec;
  return (call, callback) => {
    const ctx = new CallContext(method, call);
    const inner = async (req: UnaryRequest): Promise<UnaryResponse> => ({
      stream: false,
      service: method.parent,
      method,
      message: create(method.output, await impl(req.message, ctx)),
      get header() {
        return ctx.responseHeader;
      },
      get trailer() {
        return ctx.responseTrailer;
      },
    });
    const run = chain(interceptors, inner) as (req: UnaryRequest) => Promise<UnaryResponse>;
    run(requestOf(ctx, call.request as MessageShape<DescMessage>)).then(
      (res) => {
        ctx.end(CALL_ENDED);
        ctx.sendHeader();
        callback(null, res.message, ctx.trailer());
      },
      (err: unknown) => {
        ctx.end(CALL_ENDED);
        ctx.sendHeader();
        callback(statusOf(err, ctx.trailerHeaders()));
      },
    );
  };
}

function streamHandler(
  spec: Spec & { kind: "server_streaming" },
  interceptors: Interceptor[],
): grpc.handleServerStreamingCall<unknown, unknown> {
  const { method, impl } = spec;
  return (call) => {
    const ctx = new CallContext(method, call);
    const request = call.request as MessageShape<DescMessage>;
    const inner = async (): Promise<StreamResponse> => {
      const output = impl(request, ctx);
      async function* messages() {
        for await (const m of output) yield create(method.output, m);
      }
      return {
        stream: true,
        service: method.parent,
        method,
        message: messages(),
        get header() {
          return ctx.responseHeader;
        },
        get trailer() {
          return ctx.responseTrailer;
        },
      };
    };
    const run = chain(interceptors, inner) as (req: StreamRequest) => Promise<StreamResponse>;
    const req = {
      ...requestOf(ctx, request),
      stream: true as const,
      message: (async function* () {
        yield request;
      })(),
    } as unknown as StreamRequest;
    void (async () => {
      let headerSent = false;
      try {
        const res = await run(req);
        for await (const m of res.message) {
          if (call.cancelled) break;
          if (!headerSent) ctx.sendHeader();
          headerSent = true;
          call.write(m);
        }
        if (!headerSent) ctx.sendHeader();
        call.end(ctx.trailer());
      } catch (err) {
        call.emit("error", statusOf(err, ctx.trailerHeaders()));
      } finally {
        ctx.end(CALL_ENDED);
      }
    })();
  };
}

/** The request the server interceptors see. */
function requestOf(ctx: CallContext, message: MessageShape<DescMessage>): UnaryRequest {
  return {
    stream: false,
    service: ctx.service,
    method: ctx.method as UnaryRequest["method"],
    requestMethod: "POST",
    message,
    get url() {
      return ctx.url;
    },
    get signal() {
      return ctx.signal;
    },
    get header() {
      return ctx.requestHeader;
    },
    get contextValues() {
      return ctx.values;
    },
  };
}
