/**
 * gRPC metadata for the lean unary path as a `Headers` that costs a plain object. The
 * WHATWG `Headers` of Node (undici's) validates and normalizes every name and value
 * through WebIDL conversions and keeps a sorted list; building one per call on each side
 * and reading it in the tracing and token interceptors was several percent of the hop's
 * CPU (docs/architecture.md, "The internal gRPC hop").
 *
 * It behaves as `Headers` does for what metadata needs: names are case-insensitive (kept
 * in lower case), values are trimmed, `append` joins with ", ", invalid names and values
 * throw a TypeError. It differs in two ways that no caller of ours relies on: iteration
 * is in insertion order rather than sorted, and `instanceof Headers` is false (anything
 * that takes a `HeadersInit` accepts it, since it iterates as name/value pairs).
 */
import type { IncomingHttpHeaders } from "node:http2";

type HeadersInit = ConstructorParameters<typeof Headers>[0];
type Entries = ReturnType<Headers["entries"]>;
type Keys = ReturnType<Headers["keys"]>;

/** RFC 9110 token characters. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** What a header value may not contain (as undici refuses). */
const BAD_VALUE = /[\r\n\0]/;
const TRIM = /^[\t\n\r ]+|[\t\n\r ]+$/g;

/** Names already checked, with their lower-case form: metadata uses a handful of names. */
const checkedNames = new Map<string, string>();
const CHECKED_NAMES_MAX = 512;

function checkName(name: string): string {
  const known = checkedNames.get(name);
  if (known !== undefined) return known;
  if (!TOKEN.test(name)) throw new TypeError(`invalid header name ${JSON.stringify(name)}`);
  const lower = name.toLowerCase();
  if (checkedNames.size < CHECKED_NAMES_MAX) checkedNames.set(name, lower);
  return lower;
}

/** Space, tab, CR or LF at either end: the value needs trimming. */
const isSpace = (c: number) => c === 32 || c === 9 || c === 10 || c === 13;

function checkValue(value: string): string {
  let v = String(value);
  if (v.length > 0 && (isSpace(v.charCodeAt(0)) || isSpace(v.charCodeAt(v.length - 1))))
    v = v.replace(TRIM, "");
  if (BAD_VALUE.test(v)) throw new TypeError("invalid header value");
  return v;
}

/** A received field's value: repeated fields joined as Headers joins them. */
function joined(value: string | string[]): string {
  return Array.isArray(value) ? value.join(", ") : String(value);
}

export class LeanHeaders implements Headers {
  /**
   * A received header block, read in place until the first write or iteration (the
   * interceptors only look up a few names); then copied into #fields.
   */
  #raw: IncomingHttpHeaders | undefined;
  /** Lower-case name to value; never holds HTTP/2 pseudo-headers. */
  #fields: Map<string, string> | undefined;

  constructor(init?: HeadersInit | LeanHeaders) {
    if (init instanceof LeanHeaders) {
      this.#fields = new Map(init.#map);
      return;
    }
    if (init === undefined) return;
    if (Symbol.iterator in (init as object)) {
      for (const pair of init as Iterable<readonly string[]>) {
        if (pair.length !== 2) throw new TypeError("a header init pair must have a name and a value");
        this.append(pair[0] as string, pair[1] as string);
      }
    } else {
      for (const [name, value] of Object.entries(init as Record<string, string>)) this.append(name, value);
    }
  }

  /**
   * The metadata of a received HTTP/2 header block (pseudo-headers left out). Node has
   * already checked the names and lower-cased them; repeated fields come as arrays.
   * The block is not copied unless the headers are changed or iterated.
   */
  static fromIncoming(raw: IncomingHttpHeaders): LeanHeaders {
    const headers = new LeanHeaders();
    headers.#raw = raw;
    return headers;
  }

  /** The fields as a map, copying a received block on first use. */
  get #map(): Map<string, string> {
    if (this.#fields === undefined) {
      const map = new Map<string, string>();
      const raw = this.#raw;
      if (raw !== undefined) {
        for (const key in raw) {
          const value = raw[key];
          if (value !== undefined && key.charCodeAt(0) !== 58 /* ":" */) map.set(key, joined(value));
        }
        this.#raw = undefined;
      }
      this.#fields = map;
    }
    return this.#fields;
  }

  /** One field's value without copying a received block. */
  #lookup(name: string): string | undefined {
    const key = name.toLowerCase();
    const raw = this.#raw;
    if (raw === undefined) return this.#fields?.get(key);
    if (key.charCodeAt(0) === 58 || !Object.hasOwn(raw, key)) return undefined;
    const value = raw[key];
    return value === undefined ? undefined : joined(value);
  }

  append(name: string, value: string): void {
    const key = checkName(name);
    const v = checkValue(value);
    const old = this.#map.get(key);
    this.#map.set(key, old === undefined ? v : `${old}, ${v}`);
  }

  delete(name: string): void {
    this.#map.delete(name.toLowerCase());
  }

  get(name: string): string | null {
    return this.#lookup(name) ?? null;
  }

  getSetCookie(): string[] {
    const v = this.#lookup("set-cookie");
    return v === undefined ? [] : [v];
  }

  has(name: string): boolean {
    return this.#lookup(name) !== undefined;
  }

  set(name: string, value: string): void {
    this.#map.set(checkName(name), checkValue(value));
  }

  forEach(callback: (value: string, key: string, parent: Headers) => void, thisArg?: unknown): void {
    for (const [k, v] of this.#map) callback.call(thisArg, v, k, this);
  }

  entries(): Entries {
    return this.#map.entries() as Entries;
  }

  keys(): Keys {
    return this.#map.keys() as Keys;
  }

  values(): Keys {
    return this.#map.values() as Keys;
  }

  [Symbol.iterator](): Entries {
    return this.#map.entries() as Entries;
  }

  get [Symbol.toStringTag](): string {
    return "Headers";
  }

  /** Copies the fields into an HTTP/2 header object (values as they are, already checked). */
  copyInto(target: Record<string, string | string[] | number | undefined>): void {
    for (const [k, v] of this.#map) target[k] = v;
  }
}
