/**
 * The client side of the lean unary gRPC path: a connect `Transport` whose unary calls
 * go straight over one shared `node:http2` session, without connect-node's chains of
 * async iterables, and whose streaming calls are handed to connect-node's gRPC
 * transport. It speaks plain gRPC, so it works against any gRPC server.
 * See docs/architecture.md, "The internal gRPC hop".
 */
import * as http2 from "node:http2";
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
  type StreamResponse,
  type Transport,
  type UnaryRequest,
  type UnaryResponse,
} from "@connectrpc/connect";
import { findTrailerError } from "@connectrpc/connect/protocol-grpc";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { MAX_MESSAGE_BYTES, toHeaders } from "./fast-server.ts";
import { codeFromHttpStatus, MAX_TIMER_MS } from "./grpc-wire.ts";
import { LeanHeaders } from "./lean-headers.ts";

type HeadersInit = ConstructorParameters<typeof Headers>[0];

export interface FastTransportOptions {
  baseUrl: string;
  /** Deadline for calls that set none; a call's `timeoutMs <= 0` means none. */
  defaultTimeoutMs?: number;
  interceptors?: Interceptor[];
  /** A session with calls in flight and nothing heard for this long is pinged. */
  pingIntervalMs?: number;
  /** A ping not answered within this time closes the session (its calls fail UNAVAILABLE). */
  pingTimeoutMs?: number;
  /** A session without calls for this long is closed. */
  idleConnectionTimeoutMs?: number;
  /** HTTP/2 sessions to spread unary calls over, in turn (default 1). */
  sessions?: number;
}

export interface FastTransport extends Transport {
  /** Closes the sessions; calls in flight fail. */
  close(): void;
}

const {
  NGHTTP2_CANCEL,
  NGHTTP2_REFUSED_STREAM,
  NGHTTP2_PROTOCOL_ERROR,
  NGHTTP2_INTERNAL_ERROR,
  NGHTTP2_FLOW_CONTROL_ERROR,
  NGHTTP2_ENHANCE_YOUR_CALM,
} = http2.constants;

/** Creates the lean gRPC transport for one target. */
export function createFastGrpcTransport(options: FastTransportOptions): FastTransport {
  const pingIntervalMs = options.pingIntervalMs ?? 10_000;
  const pingTimeoutMs = options.pingTimeoutMs ?? 5_000;
  const idleMs = options.idleConnectionTimeoutMs ?? 60_000;
  const interceptors = options.interceptors ?? [];
  const holders = Array.from(
    { length: Math.max(1, options.sessions ?? 1) },
    () => new SessionHolder(options.baseUrl, pingIntervalMs, pingTimeoutMs, idleMs),
  );
  let turn = 0;
  const sessions: Sessions =
    holders.length === 1
      ? (holders[0] as SessionHolder)
      : { acquire: () => (holders[turn++ % holders.length] as SessionHolder).acquire() };
  let streaming: { transport: Transport; manager: Http2SessionManager } | undefined;
  const paths = new WeakMap<DescMethodUnary, string>();
  const pathOf = (method: DescMethodUnary) => {
    let path = paths.get(method);
    if (path === undefined) {
      path = `/${method.parent.typeName}/${method.name}`;
      paths.set(method, path);
    }
    return path;
  };
  const base = options.baseUrl.replace(/\/$/, "");

  return {
    unary<I extends DescMessage, O extends DescMessage>(
      method: DescMethodUnary<I, O>,
      signal: AbortSignal | undefined,
      timeoutMs: number | undefined,
      header: HeadersInit | undefined,
      input: MessageInitShape<I>,
      contextValues?: ContextValues,
    ): Promise<UnaryResponse<I, O>> {
      const timeout =
        timeoutMs === undefined ? options.defaultTimeoutMs : timeoutMs <= 0 ? undefined : timeoutMs;
      const message = create(method.input, input);
      const path = pathOf(method as DescMethodUnary);
      if (interceptors.length === 0) {
        return callUnary(sessions, path, method, message, signal, timeout, header);
      }
      const inner = (req: UnaryRequest<I, O>) =>
        callUnary(
          sessions,
          path,
          req.method,
          req.message,
          // The caller's own signal, unless an interceptor asked for the request's.
          req instanceof ClientRequest ? req.givenSignal() : req.signal,
          timeout,
          req.header,
        );
      let next = inner as unknown as Parameters<Interceptor>[0];
      for (let i = interceptors.length - 1; i >= 0; i--) next = (interceptors[i] as Interceptor)(next);
      const req = new ClientRequest<I, O>(method, base, path, message, signal, header, contextValues);
      return next(req) as Promise<UnaryResponse<I, O>>;
    },

    stream<I extends DescMessage, O extends DescMessage>(
      method: DescMethodStreaming<I, O>,
      signal: AbortSignal | undefined,
      timeoutMs: number | undefined,
      header: HeadersInit | undefined,
      input: AsyncIterable<MessageInitShape<I>>,
      contextValues?: ContextValues,
    ): Promise<StreamResponse<I, O>> {
      if (streaming === undefined) {
        // Streams are rare here (health Watch): connect-node's transport on its own session.
        const manager = new Http2SessionManager(
          options.baseUrl,
          { pingIntervalMs, pingTimeoutMs, idleConnectionTimeoutMs: idleMs },
          { settings: { enablePush: false } },
        );
        const transport = createGrpcTransport({
          baseUrl: options.baseUrl,
          sessionManager: manager,
          interceptors,
          ...(options.defaultTimeoutMs === undefined ? {} : { defaultTimeoutMs: options.defaultTimeoutMs }),
        });
        streaming = { transport, manager };
      }
      return streaming.transport.stream(method, signal, timeoutMs, header, input, contextValues);
    },

    close() {
      for (const h of holders) h.close();
      streaming?.manager.abort();
    },
  };
}

/**
 * The request the client interceptors see. Its `url`, `signal` and `contextValues` are
 * made on first use: most calls have no signal, and an AbortController nobody aborts
 * was a cost per call.
 */
class ClientRequest<I extends DescMessage, O extends DescMessage> implements UnaryRequest<I, O> {
  readonly stream = false;
  readonly requestMethod = "POST";
  readonly service: DescService;
  readonly method: DescMethodUnary<I, O>;
  readonly header: Headers;
  readonly message: MessageShape<I>;
  readonly #base: string;
  readonly #path: string;
  #signal: AbortSignal | undefined;
  #signalMade = false;
  #values: ContextValues | undefined;

  constructor(
    method: DescMethodUnary<I, O>,
    base: string,
    path: string,
    message: MessageShape<I>,
    signal: AbortSignal | undefined,
    header: HeadersInit | undefined,
    values: ContextValues | undefined,
  ) {
    this.service = method.parent;
    this.method = method;
    this.message = message;
    this.header = new LeanHeaders(header);
    this.#base = base;
    this.#path = path;
    this.#signal = signal;
    this.#values = values;
  }

  get url(): string {
    return `${this.#base}${this.#path}`;
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

/** Where a call gets its session. */
interface Sessions {
  acquire(): Conn | Promise<Conn>;
}

/** One HTTP/2 session to the target, replaced when it closes, fails or stops answering pings. */
class SessionHolder implements Sessions {
  readonly #url: string;
  readonly #pingIntervalMs: number;
  readonly #pingTimeoutMs: number;
  readonly #idleMs: number;
  #conn: Conn | undefined;
  /** The liveness check of an idle session that calls arriving meanwhile wait on too. */
  #checking: Promise<Conn> | undefined;
  #closed = false;

  constructor(url: string, pingIntervalMs: number, pingTimeoutMs: number, idleMs: number) {
    this.#url = url;
    this.#pingIntervalMs = pingIntervalMs;
    this.#pingTimeoutMs = pingTimeoutMs;
    this.#idleMs = idleMs;
  }

  /**
   * The session for a new call. A session that sat idle for longer than the ping
   * interval is checked with a ping first (as connect-node's session manager does), so a
   * peer that vanished meanwhile costs a reconnect rather than a failed call.
   */
  acquire(): Conn | Promise<Conn> {
    if (this.#closed) throw new ConnectError("the client is closed", Code.Unavailable);
    const conn = this.#conn;
    if (conn === undefined || !conn.usable()) return this.#open();
    if (this.#checking !== undefined) return this.#checking;
    if (conn.inFlight === 0 && Date.now() - conn.lastUsed > this.#pingIntervalMs) {
      // Every call arriving during the check shares it and its outcome: a session
      // opened for one of them must not be closed by the next one's check.
      const checking = conn.ping(this.#pingTimeoutMs).then((ok) => {
        if (this.#checking === checking) this.#checking = undefined;
        if (this.#closed) throw new ConnectError("the client is closed", Code.Unavailable);
        if (ok && conn.usable()) return conn;
        return this.#conn !== undefined && this.#conn !== conn && this.#conn.usable()
          ? this.#conn
          : this.#open();
      });
      this.#checking = checking;
      return checking;
    }
    return conn;
  }

  #open(): Conn {
    this.#checking = undefined;
    this.#conn?.close();
    const conn = new Conn(this.#url, this.#pingIntervalMs, this.#pingTimeoutMs, this.#idleMs, () => {
      if (this.#conn === conn) this.#conn = undefined;
    });
    this.#conn = conn;
    return conn;
  }

  close(): void {
    this.#closed = true;
    this.#conn?.destroy();
    this.#conn = undefined;
  }
}

/** A client session and its keepalive: pings while calls wait, closes when idle. */
class Conn {
  readonly session: http2.ClientHttp2Session;
  inFlight = 0;
  lastUsed = Date.now();
  /** Responses completed since the last keepalive tick. */
  #heard = 0;
  readonly #timer: NodeJS.Timeout;
  readonly #onGone: () => void;

  constructor(
    url: string,
    pingIntervalMs: number,
    pingTimeoutMs: number,
    idleMs: number,
    onGone: () => void,
  ) {
    this.#onGone = onGone;
    this.session = http2.connect(url, {
      settings: { enablePush: false, initialWindowSize: 4 * 1024 * 1024 },
    });
    const session = this.session;
    // Node emits `connect` even for a session destroyed while its socket was still
    // connecting (issue 17), so the handler must look before it touches the session.
    session.on("connect", () => widenSessionWindow(session));
    // A failing session also emits 'close'; without a listener an 'error' would throw.
    session.on("error", () => this.#gone());
    session.on("goaway", () => this.#gone());
    session.on("close", () => this.#gone());
    session.unref();
    this.#timer = setInterval(() => {
      if (this.inFlight === 0) {
        if (Date.now() - this.lastUsed > idleMs) this.close();
        return;
      }
      // A session still connecting has no peer to ask yet (Node cancels such a ping).
      if (session.connecting) return;
      if (this.#heard === 0) void this.ping(pingTimeoutMs);
      this.#heard = 0;
    }, pingIntervalMs);
    this.#timer.unref();
  }

  usable(): boolean {
    return !this.session.closed && !this.session.destroyed;
  }

  begin(): void {
    if (this.inFlight++ === 0) this.session.ref();
  }

  end(): void {
    this.#heard++;
    this.lastUsed = Date.now();
    if (--this.inFlight === 0 && !this.session.destroyed) this.session.unref();
  }

  /**
   * Answers whether the peer answered a ping in time; a silent peer's session is
   * destroyed. Never rejects: it runs from timers, where a throw would end the process.
   * A session still connecting counts as alive (it has nobody to ask yet), and one
   * already closing or destroyed as dead.
   */
  ping(timeoutMs: number): Promise<boolean> {
    const session = this.session;
    if (session.destroyed || session.closed) return Promise.resolve(false);
    if (session.connecting) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.destroy();
        resolve(false);
      }, timeoutMs);
      let sent = false;
      try {
        sent = session.ping((err) => {
          clearTimeout(timer);
          if (err) this.destroy();
          resolve(!err);
        });
      } catch {
        // The session was destroyed in the meantime.
      }
      if (!sent) {
        clearTimeout(timer);
        resolve(false);
      }
    });
  }

  #gone(): void {
    clearInterval(this.#timer);
    this.#onGone();
  }

  close(): void {
    this.#gone();
    if (!this.session.closed) this.session.close();
  }

  destroy(): void {
    this.#gone();
    this.session.destroy();
  }
}

/**
 * Gives a client session's connection a wide flow-control window, if the session is
 * still there: Node throws ERR_HTTP2_INVALID_SESSION for a destroyed one, and this runs
 * in an event handler, where a throw ends the process.
 */
function widenSessionWindow(session: http2.ClientHttp2Session): void {
  if (session.destroyed) return;
  try {
    session.setLocalWindowSize(16 * 1024 * 1024);
  } catch {
    // Destroyed between the check and the call; its calls fail on their own.
  }
}

/** Sends one unary call and reads its answer. */
function callUnary<I extends DescMessage, O extends DescMessage>(
  sessions: Sessions,
  path: string,
  method: DescMethodUnary<I, O>,
  message: MessageShape<I>,
  signal: AbortSignal | undefined,
  timeoutMs: number | undefined,
  header: HeadersInit | undefined,
): Promise<UnaryResponse<I, O>> {
  if (signal?.aborted) return Promise.reject(ConnectError.from(signal.reason, Code.Canceled));
  const deadline = timeoutMs === undefined ? undefined : Date.now() + timeoutMs;
  const bytes = toBinary(method.input, message);
  const frame = Buffer.allocUnsafe(5 + bytes.length);
  frame[0] = 0;
  frame.writeUInt32BE(bytes.length, 1);
  frame.set(bytes, 5);
  return new Promise((resolve, reject) => {
    const send = (conn: Conn, attempt: number) => {
      const headers: http2.OutgoingHttpHeaders = {
        ":method": "POST",
        ":path": path,
        "content-type": "application/grpc+proto",
        te: "trailers",
      };
      if (header !== undefined)
        (header instanceof LeanHeaders ? header : new LeanHeaders(header)).copyInto(headers);
      if (deadline !== undefined) headers["grpc-timeout"] = `${Math.max(1, deadline - Date.now())}m`;
      new UnaryExchange(conn, method, headers, frame, signal, deadline, resolve, reject, (refused) => {
        // The server refused the stream before looking at it (a GOAWAY raced the call):
        // sending it once more on a fresh session cannot run it twice.
        if (refused && attempt === 0) acquireThen((c) => send(c, 1));
        return refused && attempt === 0;
      });
    };
    const acquireThen = (then: (conn: Conn) => void) => {
      let got: Conn | Promise<Conn>;
      try {
        got = sessions.acquire();
      } catch (err) {
        reject(err);
        return;
      }
      if (got instanceof Conn) then(got);
      else got.then(then, (err: unknown) => reject(nodeError(err)));
    };
    acquireThen((conn) => send(conn, 0));
  });
}

/** The state of one call on the wire, from request to trailers. */
class UnaryExchange<I extends DescMessage, O extends DescMessage> {
  readonly #conn: Conn;
  readonly #method: DescMethodUnary<I, O>;
  readonly #stream: http2.ClientHttp2Stream | undefined;
  readonly #signal: AbortSignal | undefined;
  readonly #resolve: (res: UnaryResponse<I, O>) => void;
  readonly #reject: (err: unknown) => void;
  readonly #retry: (refused: boolean) => boolean;
  #timer: NodeJS.Timeout | undefined;
  #settled = false;
  #headers: http2.IncomingHttpHeaders | undefined;
  #trailers: http2.IncomingHttpHeaders | undefined;
  readonly #chunks: Buffer[] = [];
  #size = 0;
  #error: unknown;
  readonly #onAbort = () => {
    const signal = this.#signal;
    this.#fail(ConnectError.from(signal?.reason, Code.Canceled));
  };

  constructor(
    conn: Conn,
    method: DescMethodUnary<I, O>,
    headers: http2.OutgoingHttpHeaders,
    frame: Buffer,
    signal: AbortSignal | undefined,
    deadline: number | undefined,
    resolve: (res: UnaryResponse<I, O>) => void,
    reject: (err: unknown) => void,
    retry: (refused: boolean) => boolean,
  ) {
    this.#conn = conn;
    this.#method = method;
    this.#signal = signal;
    this.#resolve = resolve;
    this.#reject = reject;
    this.#retry = retry;
    conn.begin();
    let stream: http2.ClientHttp2Stream;
    try {
      stream = conn.session.request(headers);
    } catch (err) {
      this.#stream = undefined;
      conn.end();
      this.#settled = true;
      if (!retry(true)) reject(nodeError(err));
      return;
    }
    this.#stream = stream;
    if (deadline !== undefined && deadline - Date.now() <= MAX_TIMER_MS) {
      this.#timer = setTimeout(
        () => this.#fail(new ConnectError("the operation timed out", Code.DeadlineExceeded)),
        Math.max(0, deadline - Date.now()),
      );
    }
    signal?.addEventListener("abort", this.#onAbort);
    stream.on("response", (h) => {
      this.#headers = h;
    });
    stream.on("data", (chunk: Buffer) => this.#data(chunk));
    stream.on("trailers", (t) => {
      this.#trailers = t;
    });
    stream.on("error", (err) => {
      this.#error = err;
    });
    stream.on("close", () => this.#closed());
    stream.end(frame);
  }

  #data(chunk: Buffer): void {
    this.#size += chunk.length;
    if (this.#size > MAX_MESSAGE_BYTES + 5) {
      this.#fail(new ConnectError(`message larger than ${MAX_MESSAGE_BYTES} bytes`, Code.ResourceExhausted));
      return;
    }
    this.#chunks.push(chunk);
  }

  #cleanup(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#signal?.removeEventListener("abort", this.#onAbort);
  }

  #fail(err: ConnectError): void {
    if (this.#settled) return;
    this.#settled = true;
    this.#cleanup();
    this.#reject(err);
    const stream = this.#stream;
    if (stream === undefined || stream.closed || stream.destroyed) return;
    try {
      stream.close(NGHTTP2_CANCEL);
    } catch {
      // Its session went away meanwhile, taking the stream with it.
    }
  }

  #closed(): void {
    this.#conn.end();
    if (this.#settled) return;
    this.#settled = true;
    this.#cleanup();
    try {
      this.#resolve(this.#answer());
    } catch (err) {
      if (err instanceof RefusedStream) {
        if (!this.#retry(true)) this.#reject(err.error);
        return;
      }
      this.#reject(err);
    }
  }

  /** The response, or throws the call's error. */
  #answer(): UnaryResponse<I, O> {
    const stream = this.#stream as http2.ClientHttp2Stream;
    const headers = this.#headers;
    if (headers === undefined) {
      const rst = stream.rstCode;
      if (rst === NGHTTP2_REFUSED_STREAM) throw new RefusedStream(rstError(rst));
      const code = (this.#error as { code?: unknown } | undefined)?.code;
      if (code === "ERR_HTTP2_GOAWAY_SESSION") throw new RefusedStream(nodeError(this.#error));
      // A stream the session took down with it carries the connection's error (say
      // ECONNREFUSED) and a generic reset code: the error says more.
      if (this.#error !== undefined && code !== "ERR_HTTP2_STREAM_ERROR") throw nodeError(this.#error);
      // This client cancels only calls it has settled already, so a CANCEL before any
      // answer came from the server abandoning the stream, which is what a server does
      // to the streams of a session it destroys: the call may or may not have run.
      if (rst === NGHTTP2_CANCEL)
        throw new ConnectError("the server ended the stream before answering", Code.Unavailable);
      // A peer that resets streams with ENHANCE_YOUR_CALM before answering has given up
      // on this session (a grpc-js server whose session memory filled up with an
      // oversized request refuses every later stream so): later calls go to a new one.
      if (rst === NGHTTP2_ENHANCE_YOUR_CALM) this.#conn.close();
      const reset = rstError(rst);
      if (reset !== undefined) throw reset;
      if (this.#error !== undefined) throw nodeError(this.#error);
      throw new ConnectError("the stream closed without a response", Code.Unavailable);
    }
    const status = Number(headers[":status"]);
    if (status !== 200)
      throw new ConnectError(`HTTP ${status}`, codeFromHttpStatus(status), toHeaders(headers));
    const type = String(headers["content-type"] ?? "");
    if (!type.startsWith("application/grpc")) {
      throw new ConnectError(`unsupported content type ${type}`, Code.Unknown);
    }
    const encoding = headers["grpc-encoding"];
    if (encoding !== undefined && encoding !== "identity") {
      throw new ConnectError(`unsupported response encoding "${String(encoding)}"`, Code.Internal);
    }
    // A trailers-only response carries its status in the headers.
    const statusFields = this.#trailers ?? (headers["grpc-status"] !== undefined ? headers : undefined);
    if (statusFields === undefined) {
      if (this.#error !== undefined) throw nodeError(this.#error);
      // No status at all: the answer was cut off, as when the server's session ends
      // (GOAWAY, destroyed) before the trailers; Node then ends the stream with a
      // NO_ERROR reset or none. The call may or may not have run: UNAVAILABLE, as for
      // any connection failure, retried by callers under the call's own idempotency key
      // (connect-node says INTERNAL here). A CANCEL is the server abandoning the
      // stream, as above.
      const rst = stream.rstCode ?? 0;
      throw (
        (rst === NGHTTP2_CANCEL ? undefined : rstError(rst)) ??
        new ConnectError("the stream ended before its status", Code.Unavailable)
      );
    }
    const grpcStatus = statusFields["grpc-status"];
    if (grpcStatus !== "0") {
      const err =
        trailerError(toHeaders(statusFields)) ??
        new ConnectError("protocol error: missing status", Code.Internal, toHeaders(statusFields));
      if (statusFields !== headers) for (const [k, v] of toHeaders(headers)) err.metadata.append(k, v);
      throw err;
    }
    const message = this.#parse();
    const trailers = this.#trailers;
    return {
      stream: false,
      service: this.#method.parent,
      method: this.#method,
      message,
      get header() {
        return toHeaders(headers);
      },
      get trailer() {
        return trailers === undefined ? new LeanHeaders() : toHeaders(trailers);
      },
    };
  }

  #parse(): MessageShape<O> {
    const chunks = this.#chunks;
    const body = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, this.#size);
    if (body.length === 0) {
      throw new ConnectError("protocol error: missing output message for unary method", Code.Unimplemented);
    }
    if (body.length < 5) throw new ConnectError("protocol error: incomplete envelope", Code.Internal);
    const length = body.readUInt32BE(1);
    if (body.length < 5 + length)
      throw new ConnectError("protocol error: incomplete envelope", Code.Internal);
    if (body.length > 5 + length) {
      throw new ConnectError(
        "protocol error: received extra output message for unary method",
        Code.Unimplemented,
      );
    }
    if (((body[0] ?? 0) & 0b1) !== 0) {
      throw new ConnectError(
        "received compressed envelope, but do not know how to decompress",
        Code.Internal,
      );
    }
    try {
      return fromBinary(this.#method.output, body.subarray(5));
    } catch (err) {
      throw new ConnectError(
        `parse binary: ${err instanceof Error ? err.message : String(err)}`,
        Code.Internal,
      );
    }
  }
}

/**
 * The error of a status other than OK (connect's findTrailerError). Its
 * decodeURIComponent throws on a `grpc-message` that is not valid percent-encoding (a
 * bare "%"); the gRPC spec says to pass such a message on as it came, as grpc-js does.
 */
function trailerError(fields: Headers): ConnectError | undefined {
  try {
    return findTrailerError(fields);
  } catch (err) {
    if (!(err instanceof URIError)) throw err;
    const status = Number(fields.get("grpc-status"));
    const known = Number.isInteger(status) && status > 0 && status <= Code.Unauthenticated;
    const error = known
      ? new ConnectError(fields.get("grpc-message") ?? "", status as Code, fields)
      : new ConnectError(`invalid grpc-status: ${fields.get("grpc-status")}`, Code.Internal, fields);
    error.isWireError = true;
    return error;
  }
}

/** A stream the server never looked at: safe to send again. */
class RefusedStream extends Error {
  readonly error: ConnectError;
  constructor(error: ConnectError | undefined) {
    super("refused stream");
    this.error = error ?? new ConnectError("the server refused the stream", Code.Unavailable);
  }
}

/** A ConnectError for an HTTP/2 stream reset without a gRPC status (as connect-node maps them). */
function rstError(rstCode: number): ConnectError | undefined {
  const text = `http/2 stream closed with error code 0x${rstCode.toString(16)}`;
  switch (rstCode) {
    case NGHTTP2_REFUSED_STREAM:
      return new ConnectError(text, Code.Unavailable);
    case NGHTTP2_CANCEL:
      return new ConnectError(text, Code.Canceled);
    case NGHTTP2_ENHANCE_YOUR_CALM:
      return new ConnectError(text, Code.ResourceExhausted);
    case NGHTTP2_PROTOCOL_ERROR:
    case NGHTTP2_INTERNAL_ERROR:
    case NGHTTP2_FLOW_CONTROL_ERROR:
      return new ConnectError(text, Code.Internal);
    default:
      return undefined;
  }
}

/** Connection failures are UNAVAILABLE (retryable), anything else INTERNAL. */
function nodeError(err: unknown): ConnectError {
  if (err instanceof ConnectError) return err;
  const code = (err as { code?: unknown } | undefined)?.code;
  const unavailable =
    typeof code === "string" &&
    (code.startsWith("ERR_HTTP2_") ||
      [
        "ECONNREFUSED",
        "ECONNRESET",
        "EPIPE",
        "ETIMEDOUT",
        "ENOTFOUND",
        "EAI_AGAIN",
        "ERR_STREAM_DESTROYED",
      ].includes(code));
  return ConnectError.from(err, unavailable ? Code.Unavailable : Code.Internal);
}
