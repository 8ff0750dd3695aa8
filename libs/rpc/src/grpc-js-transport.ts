import {
  create,
  type DescMessage,
  type DescMethodStreaming,
  type DescMethodUnary,
  type DescService,
  fromBinary,
  type MessageInitShape,
  type MessageShape,
  toBinary,
} from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  type ContextValues,
  createContextValues,
  type Interceptor,
  type StreamRequest,
  type StreamResponse,
  type Transport,
  type UnaryRequest,
  type UnaryResponse,
} from "@connectrpc/connect";
import * as grpc from "@grpc/grpc-js";
import { MAX_MESSAGE_BYTES } from "./grpc-js-server.ts";
import { errorOf, toHeaders, toMetadata } from "./grpc-js-status.ts";

type HeadersInit = ConstructorParameters<typeof Headers>[0];

export interface GrpcJsTransportOptions {
  /** `http://host:port` of the target. */
  baseUrl: string;
  /** Deadline for calls that set none; a call's `timeoutMs <= 0` means none. */
  defaultTimeoutMs?: number;
  interceptors?: Interceptor[];
  /** A session with calls in flight and nothing heard for this long is pinged. */
  pingIntervalMs?: number;
  /** A ping not answered within this time closes the session (its calls fail UNAVAILABLE). */
  pingTimeoutMs?: number;
  /** A channel without calls for this long lets its session go. */
  idleConnectionTimeoutMs?: number;
  /** HTTP/2 sessions to spread unary calls over, in turn (default 1). */
  sessions?: number;
}

export interface GrpcJsTransport extends Transport {
  /** Closes the channels; calls in flight fail. */
  close(): void;
}

/**
 * A connect `Transport` over @grpc/grpc-js, so `createClient(Service, transport)` gives
 * an ordinary connect client whose calls, interceptors and errors behave as connect's
 * own gRPC transport's do: deadlines from `timeoutMs`, cancellation from `signal`,
 * headers as metadata, and failures as ConnectErrors with their details.
 */
export function createGrpcJsTransport(options: GrpcJsTransportOptions): GrpcJsTransport {
  const url = new URL(options.baseUrl);
  const target = `${url.hostname}:${url.port || "80"}`;
  const channelOptions: grpc.ChannelOptions = {
    "grpc.max_receive_message_length": MAX_MESSAGE_BYTES,
    "grpc.max_send_message_length": MAX_MESSAGE_BYTES,
    "grpc.keepalive_time_ms": options.pingIntervalMs ?? 10_000,
    "grpc.keepalive_timeout_ms": options.pingTimeoutMs ?? 5_000,
    "grpc.client_idle_timeout_ms": options.idleConnectionTimeoutMs ?? 60_000,
    // Each client its own connection: two transports to one target must not share one.
    "grpc.use_local_subchannel_pool": 1,
    // No service config from DNS TXT records: a retry or hedging policy there would send
    // again calls whose outcome is unknown.
    "grpc.service_config_disable_resolution": 1,
  };
  const clients = Array.from(
    { length: Math.max(1, options.sessions ?? 1) },
    () => new grpc.Client(target, grpc.credentials.createInsecure(), channelOptions),
  );
  let turn = 0;
  const next = () => clients[clients.length === 1 ? 0 : turn++ % clients.length] as grpc.Client;
  const interceptors = options.interceptors ?? [];
  const base = options.baseUrl.replace(/\/$/, "");
  const timeoutOf = (timeoutMs: number | undefined) =>
    timeoutMs === undefined ? options.defaultTimeoutMs : timeoutMs <= 0 ? undefined : timeoutMs;

  return {
    unary<I extends DescMessage, O extends DescMessage>(
      method: DescMethodUnary<I, O>,
      signal: AbortSignal | undefined,
      timeoutMs: number | undefined,
      header: HeadersInit | undefined,
      input: MessageInitShape<I>,
      contextValues?: ContextValues,
    ): Promise<UnaryResponse<I, O>> {
      const timeout = timeoutOf(timeoutMs);
      const req = new ClientRequest<I, O>(
        method,
        base,
        create(method.input, input),
        signal,
        header,
        contextValues,
      );
      const inner = (r: UnaryRequest<I, O>) =>
        callUnary(
          next(),
          r.method,
          r.message,
          r instanceof ClientRequest ? r.givenSignal() : r.signal,
          timeout,
          r.header,
        );
      return intercepted(interceptors, inner)(req) as Promise<UnaryResponse<I, O>>;
    },

    async stream<I extends DescMessage, O extends DescMessage>(
      method: DescMethodStreaming<I, O>,
      signal: AbortSignal | undefined,
      timeoutMs: number | undefined,
      header: HeadersInit | undefined,
      input: AsyncIterable<MessageInitShape<I>>,
      contextValues?: ContextValues,
    ): Promise<StreamResponse<I, O>> {
      if (method.methodKind !== "server_streaming")
        throw new ConnectError(`${method.methodKind} calls are not supported`, Code.Unimplemented);
      const timeout = timeoutOf(timeoutMs);
      const req: StreamRequest<I, O> = {
        stream: true,
        service: method.parent,
        method,
        requestMethod: "POST",
        url: `${base}/${method.parent.typeName}/${method.name}`,
        signal: signal ?? new AbortController().signal,
        header: new Headers(header),
        contextValues: contextValues ?? createContextValues(),
        message: (async function* () {
          for await (const m of input) yield create(method.input, m);
        })(),
      };
      const inner = (r: StreamRequest<I, O>) => callServerStream(next(), r, timeout);
      return intercepted(interceptors, inner)(req) as Promise<StreamResponse<I, O>>;
    },

    close() {
      for (const c of clients) c.close();
    },
  };
}

/** The client interceptors around `inner`, outermost first (as connect applies them). */
function intercepted<R>(interceptors: Interceptor[], inner: (req: R) => Promise<unknown>) {
  let next = inner as unknown as Parameters<Interceptor>[0];
  for (let i = interceptors.length - 1; i >= 0; i--) next = (interceptors[i] as Interceptor)(next);
  return next as unknown as (req: R) => Promise<unknown>;
}

/**
 * The request the client interceptors see. Its `url`, `signal` and `contextValues` are
 * made on first use: most calls have no signal.
 */
class ClientRequest<I extends DescMessage, O extends DescMessage> implements UnaryRequest<I, O> {
  readonly stream = false;
  readonly requestMethod = "POST";
  readonly service: DescService;
  readonly method: DescMethodUnary<I, O>;
  readonly header: Headers;
  readonly message: MessageShape<I>;
  readonly #base: string;
  #signal: AbortSignal | undefined;
  #signalMade = false;
  #values: ContextValues | undefined;

  constructor(
    method: DescMethodUnary<I, O>,
    base: string,
    message: MessageShape<I>,
    signal: AbortSignal | undefined,
    header: HeadersInit | undefined,
    values: ContextValues | undefined,
  ) {
    this.service = method.parent;
    this.method = method;
    this.message = message;
    this.header = new Headers(header);
    this.#base = base;
    this.#signal = signal;
    this.#values = values;
  }

  get url(): string {
    return `${this.#base}/${this.service.typeName}/${this.method.name}`;
  }

  get signal(): AbortSignal {
    if (this.#signal === undefined) {
      this.#signal = new AbortController().signal;
      this.#signalMade = true;
    }
    return this.#signal;
  }

  /** The signal the caller gave (one made here on request can never abort). */
  givenSignal(): AbortSignal | undefined {
    return this.#signalMade ? undefined : this.#signal;
  }

  get contextValues(): ContextValues {
    this.#values ??= createContextValues();
    return this.#values;
  }
}

function pathOf(method: { parent: DescService; name: string }): string {
  return `/${method.parent.typeName}/${method.name}`;
}

/** A Buffer over the same bytes (grpc-js wants Buffers; copying them is waste). */
function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

function callOptions(timeoutMs: number | undefined): grpc.CallOptions {
  return timeoutMs === undefined ? {} : { deadline: Date.now() + timeoutMs };
}

/** One unary call; a failure is a ConnectError with the status's code, message and details. */
function callUnary<I extends DescMessage, O extends DescMessage>(
  client: grpc.Client,
  method: DescMethodUnary<I, O>,
  message: MessageShape<I>,
  signal: AbortSignal | undefined,
  timeoutMs: number | undefined,
  header: Headers,
): Promise<UnaryResponse<I, O>> {
  if (signal?.aborted) return Promise.reject(ConnectError.from(signal.reason, Code.Canceled));
  return new Promise((resolve, reject) => {
    let responseHeader: grpc.Metadata | undefined;
    let trailers: grpc.Metadata | undefined;
    let onAbort: (() => void) | undefined;
    const call = client.makeUnaryRequest<MessageShape<I>, MessageShape<O>>(
      pathOf(method),
      (m) => asBuffer(toBinary(method.input, m)),
      (b) => fromBinary(method.output, b),
      message,
      toMetadata(header),
      callOptions(timeoutMs),
      (err, value) => {
        if (onAbort !== undefined) signal?.removeEventListener("abort", onAbort);
        if (err !== null || value === undefined) {
          reject(
            err !== null && signal?.aborted ? ConnectError.from(signal.reason, Code.Canceled) : errorOf(err),
          );
          return;
        }
        resolve({
          stream: false,
          service: method.parent,
          method,
          message: value,
          get header() {
            return toHeaders(responseHeader);
          },
          // grpc-js emits 'status' (the trailers) right after this callback, before
          // anyone awaiting the promise runs.
          get trailer() {
            return toHeaders(trailers);
          },
        });
      },
    );
    call.once("metadata", (m) => {
      responseHeader = m;
    });
    call.once("status", (s: grpc.StatusObject) => {
      trailers = s.metadata;
    });
    if (signal !== undefined) {
      onAbort = () => call.cancel();
      signal.addEventListener("abort", onAbort, { once: true });
    }
  });
}

/** One server-streaming call: the request's one message out, the answers as they come. */
async function callServerStream<I extends DescMessage, O extends DescMessage>(
  client: grpc.Client,
  req: StreamRequest<I, O>,
  timeoutMs: number | undefined,
): Promise<StreamResponse<I, O>> {
  const method = req.method;
  let first: MessageShape<I> | undefined;
  for await (const m of req.message) {
    first = m;
    break;
  }
  const call = client.makeServerStreamRequest<MessageShape<I>, MessageShape<O>>(
    pathOf(method),
    (m) => asBuffer(toBinary(method.input, m)),
    (b) => fromBinary(method.output, b),
    first ?? create(method.input),
    toMetadata(req.header),
    callOptions(timeoutMs),
  );
  const onAbort = () => call.cancel();
  req.signal.addEventListener("abort", onAbort, { once: true });
  const header = new Headers();
  const trailer = new Headers();
  call.once("metadata", (m) => {
    for (const [k, v] of toHeaders(m)) header.append(k, v);
  });
  call.once("status", (s: grpc.StatusObject) => {
    for (const [k, v] of toHeaders(s.metadata)) trailer.append(k, v);
  });
  async function* messages(): AsyncGenerator<MessageShape<O>> {
    try {
      for await (const m of call) yield m as MessageShape<O>;
    } catch (err) {
      throw req.signal.aborted ? ConnectError.from(req.signal.reason, Code.Canceled) : errorOf(err);
    } finally {
      req.signal.removeEventListener("abort", onAbort);
      call.cancel();
    }
  }
  return { stream: true, service: method.parent, method, header, trailer, message: messages() };
}
