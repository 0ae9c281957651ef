// Entry of a tool_search_code child: one process serves exactly one run, then the parent kills it.
//
// Plain ESM on purpose: the parent starts it with the permission model and no grant beyond reading this
// file, so it may import nothing but node: builtins. Protocol: newline-delimited JSON.
//   parent -> child (stdin):  {t:'hello', limits} at spawn, {t:'run', body} once, then {t:'res', id, ok, value | error}
//   child -> parent (stdout): {t:'ready'} (after the hello), {t:'req', id, op, args}, {t:'log', level, text},
//                             finally {t:'result', value} or {t:'error', code, message}
//
// The guest body runs in a vm context created with DONT_CONTEXTIFY (its global is an ordinary guest global,
// not an interceptor over a host object) and without code generation from strings. The guest is given no
// host function at all: it appends protocol lines to a string outbox inside its own realm and the host
// drains it after every turn of the event loop, calling guest functions with primitive arguments only.
// So no host object or host error can reach guest code. vm is not a security boundary on its own: the
// permission model, the empty environment, the OS network cut and the parent's SIGKILL hold without it.
import { readSync, writeSync } from 'node:fs';
import { clearImmediate } from 'node:timers';
import vm from 'node:vm';

const GUEST_FILE = 'tool_search_code.js';
const OPS = new Set(['search', 'describe', 'call']);
const LEVELS = new Set(['log', 'warn', 'error']);
const MARKER_ROOM = 4096;

/** The limits of the run, from the parent's hello (these defaults are the parent's too). */
const limits = { maxLogBytes: 65536, maxResultBytes: 262144, maxArgBytes: 1048576, maxCalls: 1000 };

// Spawned with an empty environment; bwrap --chdir still sets PWD. Nothing of it is needed here.
for (const key of Object.keys(process.env)) delete process.env[key];

/** What the child sleeps on (see `sleepUntilKilled` and `writeOut`); nothing ever wakes it. */
const asleep = new Int32Array(new SharedArrayBuffer(4));

// A rejection or exception left behind by guest code must not crash the child; the run still settles.
process.on('unhandledRejection', () => {});
process.on('uncaughtException', () => {});

/**
 * Protocol lines go out with a blocking write on fd 1 (the parent's pipe) and come in with blocking reads on fd 0
 * (`serve`), not through process.stdout and process.stdin: a stream is several layers of JavaScript per line, run
 * cold by a fresh process, and a warm run's answer is a single line each way. A full pipe blocks the write until the
 * parent reads (the parent's wall clock still holds).
 */
const writeOut = (line) => {
  const bytes = Buffer.from(line);
  for (let at = 0; at < bytes.length;) {
    try {
      at += writeSync(1, bytes, at);
    } catch (e) {
      // Gone: the parent closed the pipe or was killed; nothing can be delivered any more.
      if (e?.code !== 'EAGAIN' && e?.code !== 'EINTR') process.exit(0);
      Atomics.wait(asleep, 0, 0, 1);
    }
  }
};

if (vm.constants?.DONT_CONTEXTIFY === undefined || !process.execArgv.includes('--experimental-vm-modules')) {
  // Without these the guest could reach host objects (see the header); refuse rather than run weaker.
  writeOut(
    JSON.stringify({
      t: 'fatal',
      message: 'this Node lacks vm.constants.DONT_CONTEXTIFY or was started without --experimental-vm-modules',
    }) + '\n',
  );
  process.exit(70);
}

const newGuestContext = () =>
  vm.createContext(vm.constants.DONT_CONTEXTIFY, {
    name: 'tool_search_code',
    codeGeneration: { strings: false, wasm: false },
  });
const context = newGuestContext();
const GuestError = vm.runInContext('Error', context);

/** import() in guest code rejects with a guest-realm error (the host default would leak a host error). */
const importModuleDynamically = () => {
  const e = new GuestError(
    'import() is not available in tool_search_code: use tools.search, tools.describe and tools.call',
  );
  Object.defineProperty(e, 'code', { value: 'sandbox.importBlocked', enumerable: true });
  throw e;
};

/**
 * How a body is compiled. A script with its own import() hook gets a host-defined option of its own (a new symbol),
 * registered with Node's module machinery on the run's path. Only a body whose text holds `import` can contain an
 * import() call (a keyword cannot be spelled with escapes, and guest code cannot make code from strings), so only
 * such a body is compiled with the hook; any other has no import() for the host default to answer.
 */
const WITH_IMPORT_HOOK = { filename: GUEST_FILE, importModuleDynamically };
const WITHOUT_IMPORT = { filename: GUEST_FILE };
const bodyOptions = (body) => (body.includes('import') ? WITH_IMPORT_HOOK : WITHOUT_IMPORT);

const BOOTSTRAP = String.raw`(function bootstrap() {
  'use strict';
  const limits = { __proto__: null, maxLogBytes: 65536, maxResultBytes: 262144, maxArgBytes: 1048576, maxCalls: 1000 };
  const G = globalThis;
  const O = Object, A = Array, S = String, P = Promise, E = Error, R = Reflect, J = JSON, MapC = Map, SetC = Set;
  const apply = R.apply, defineProperty = O.defineProperty, freeze = O.freeze, keys = O.keys,
    setPrototypeOf = O.setPrototypeOf, isArray = A.isArray, stringify = J.stringify, parse = J.parse,
    isView = ArrayBuffer.isView, isFiniteN = Number.isFinite;
  const mapGet = MapC.prototype.get, mapSet = MapC.prototype.set, mapDelete = MapC.prototype.delete,
    mapEntries = MapC.prototype.entries, mapSize = O.getOwnPropertyDescriptor(MapC.prototype, 'size').get,
    setHas = SetC.prototype.has, setAdd = SetC.prototype.add, setDelete = SetC.prototype.delete,
    setValues = SetC.prototype.values, setSize = O.getOwnPropertyDescriptor(SetC.prototype, 'size').get,
    iterNext = O.getPrototypeOf(new MapC().entries()).next, setIterNext = O.getPrototypeOf(new SetC().values()).next,
    then = P.prototype.then, slice = S.prototype.slice, symToString = Symbol.prototype.toString,
    dateTime = Date.prototype.getTime, dateIso = Date.prototype.toISOString, fnName = O.getOwnPropertyDescriptor;

  // Locked so Node's host-side stack formatter is never reached by guest errors (it can throw host errors).
  const header = (e) => {
    try { return S(e.name) + ': ' + S(e.message); } catch (x) { return 'Error'; }
  };
  const formatStack = (e, frames) => {
    let s = header(e);
    try {
      for (let i = 0; i < frames.length; i++) {
        const f = frames[i];
        if (f.getFileName() === '${GUEST_FILE}') s += '\n    at ' + S(f.getFunctionName() || '<body>') + ' (line ' + (f.getLineNumber() - 1) + ')';
      }
    } catch (x) {}
    return s;
  };
  defineProperty(E, 'prepareStackTrace', { value: formatStack, writable: false, configurable: false });
  defineProperty(G, 'Error', { writable: false, configurable: false });
  for (const name of ['console', 'SharedArrayBuffer', 'Atomics', 'WebAssembly', 'FinalizationRegistry', 'WeakRef']) delete G[name];

  let outbox = '';
  const emit = (line) => { outbox += line + '\n'; };
  const str = (s) => stringify(S(s));

  // JSON-safe conversion; builds null-prototype containers so prototype tricks cannot change the output.
  // mode 'cut' (results, logs): strings and containers are cut past the budget with a marker, and what JSON
  // cannot carry (functions, symbols, BigInt, cycles, values that throw when read) is described in a string.
  // mode 'strict' (bridge arguments): past the budget throws TooLarge, and anything JSON cannot carry throws
  // BadArgument with badWhat naming the value at fault (a tool never runs on arguments the model did not mean).
  const TooLarge = {};
  const BadArgument = {};
  let badWhat = '';
  const convert = (root, budget, mode) => {
    let used = 0;
    const strict = mode === 'strict';
    const seen = new SetC();
    const bad = (path, what) => {
      const where = path === '' ? 'the value' : (path.length > 200 ? apply(slice, path, [0, 200]) + '…' : path);
      badWhat = where + ' ' + what;
      throw BadArgument;
    };
    const at = (path, k) => (strict ? (path === '' ? S(k) : path + '.' + S(k)) : '');
    const atIndex = (path, i) => (strict ? path + '[' + i + ']' : '');
    const rethrow = (x) => { if (x === TooLarge || x === BadArgument) throw x; };
    const cutString = (s) => {
      const room = budget - used;
      if (s.length <= room) { used += s.length + 2; return s; }
      if (mode === 'strict') throw TooLarge;
      const keep = room > 0 ? room : 0;
      used = budget + 1;
      return apply(slice, s, [0, keep]) + '…[truncated ' + (s.length - keep) + ' bytes]';
    };
    const conv = (v, depth, path) => {
      if (used > budget) { if (strict) throw TooLarge; return '…[truncated]'; }
      switch (typeof v) {
        case 'string': return cutString(v);
        case 'number': used += 8; return isFiniteN(v) ? v : null;
        case 'boolean': used += 5; return v;
        case 'undefined': return undefined;
        case 'bigint': if (strict) bad(path, 'is a BigInt'); return cutString(S(v) + 'n');
        case 'symbol': if (strict) bad(path, 'is a symbol'); return cutString(apply(symToString, v, []));
        case 'function': {
          let n = '';
          try { const d = fnName(v, 'name'); if (d && typeof d.value === 'string') n = d.value; } catch (x) {}
          if (strict) bad(path, 'is a function' + (n ? ' (' + n + ')' : ''));
          return cutString('[Function ' + (n || 'anonymous') + ']');
        }
      }
      if (v === null) { used += 4; return null; }
      if (depth > 64) { if (strict) bad(path, 'is nested more than 64 levels deep'); return '[Depth limit]'; }
      if (apply(setHas, seen, [v])) { if (strict) bad(path, 'refers back to itself (a circular reference)'); return '[Circular]'; }
      apply(setAdd, seen, [v]);
      try {
        return convObject(v, depth, path);
      } catch (x) {
        rethrow(x);
        if (strict) bad(path, 'cannot be read: ' + header(x));
        return '[Unserializable]';
      } finally {
        apply(setDelete, seen, [v]);
      }
    };
    const newArray = () => setPrototypeOf([], null);
    const newObject = () => ({ __proto__: null });
    const put = (o, k, v) => { used += S(k).length + 4; defineProperty(o, k, { value: v, enumerable: true, writable: true, configurable: true }); };
    const more = (arr, n) => { if (used > budget && n > 0) put(arr, arr.length, '…[truncated ' + n + ' more items]'); };
    const convObject = (v, depth, path) => {
      let isMap = false, isSet = false, isDate = false;
      try { apply(mapSize, v, []); isMap = true; } catch (x) {}
      try { apply(setSize, v, []); isSet = true; } catch (x) {}
      try { apply(dateTime, v, []); isDate = true; } catch (x) {}
      if (isDate) { try { return apply(dateIso, v, []); } catch (x) { return 'Invalid Date'; } }
      if (isMap || isSet) {
        const out = newArray();
        const it = isMap ? apply(mapEntries, v, []) : apply(setValues, v, []);
        const next = isMap ? iterNext : setIterNext;
        let allStringKeys = true;
        for (let r = apply(next, it, []); !r.done; r = apply(next, it, [])) {
          if (used > budget) { put(out, out.length, '…[truncated]'); break; }
          if (isMap) {
            if (typeof r.value[0] !== 'string') allStringKeys = false;
            const pair = newArray();
            put(pair, 0, conv(r.value[0], depth + 1, atIndex(path, out.length)));
            put(pair, 1, conv(r.value[1], depth + 1, atIndex(path, out.length)));
            put(out, out.length, pair);
          } else {
            const c = conv(r.value, depth + 1, atIndex(path, out.length));
            put(out, out.length, c === undefined ? null : c);
          }
        }
        if (isMap && allStringKeys) {
          const obj = newObject();
          for (let i = 0; i < out.length; i++) { const pair = out[i]; if (isArray(pair) && pair[1] !== undefined) put(obj, pair[0], pair[1]); }
          return obj;
        }
        return out;
      }
      if (v instanceof E) {
        const o = newObject();
        let name = 'Error', message = '', code;
        try { name = S(v.name); } catch (x) {}
        try { message = S(v.message); } catch (x) {}
        try { if (v.code !== undefined) code = S(v.code); } catch (x) {}
        put(o, 'name', cutString(name));
        put(o, 'message', cutString(message));
        if (code !== undefined) put(o, 'code', cutString(code));
        return o;
      }
      if (isArray(v) || isView(v)) {
        const out = newArray();
        const n = v.length;
        for (let i = 0; i < n; i++) {
          if (used > budget) { if (strict) throw TooLarge; more(out, n - i); break; }
          let c;
          try { c = conv(v[i], depth + 1, atIndex(path, i)); } catch (x) {
            rethrow(x);
            if (strict) bad(atIndex(path, i), 'cannot be read: ' + header(x));
            c = '[Thrown]';
          }
          put(out, i, c === undefined ? null : c);
        }
        return out;
      }
      let toJSON;
      try { toJSON = v.toJSON; } catch (x) { if (strict) bad(path, 'cannot be read: its toJSON threw ' + header(x)); }
      if (typeof toJSON === 'function') {
        let j;
        try { j = apply(toJSON, v, []); } catch (x) { if (strict) bad(path, 'cannot be turned into JSON: its toJSON() threw ' + header(x)); throw x; }
        return conv(j, depth + 1, path);
      }
      const out = newObject();
      const ks = keys(v);
      for (let i = 0; i < ks.length; i++) {
        if (used > budget) { if (strict) throw TooLarge; put(out, '…', '[truncated ' + (ks.length - i) + ' more keys]'); break; }
        const k = ks[i];
        let c;
        try { c = conv(v[k], depth + 1, at(path, k)); } catch (x) {
          rethrow(x);
          if (strict) bad(at(path, k), 'cannot be read: ' + header(x));
          c = '[Thrown: ' + header(x) + ']';
        }
        if (c !== undefined) put(out, k, c);
      }
      return out;
    };
    return conv(root, 0, '');
  };

  // console: formats in the guest, stops sending past the log budget (the host and parent cap again).
  let logUsed = 0;
  const format = (args) => {
    let text = '';
    for (let i = 0; i < args.length; i++) {
      const a = args[i];
      let part;
      if (typeof a === 'string') part = a;
      else {
        try { const c = convert(a, limits.maxLogBytes, 'cut'); part = c === undefined ? 'undefined' : stringify(c); }
        catch (x) { part = '[Unserializable]'; }
      }
      text += (i > 0 ? ' ' : '') + part;
    }
    return text;
  };
  const makeLog = (level) => freeze(function (...args) {
    if (logUsed > limits.maxLogBytes) return;
    let text = format(args);
    // Cut here already, so one enormous line does not have to be copied through the protocol.
    const room = limits.maxLogBytes - logUsed + 16;
    if (text.length > room) text = apply(slice, text, [0, room]);
    logUsed += text.length + 1;
    emit('{"t":"log","level":"' + level + '","text":' + str(text) + '}');
  });
  const console = freeze({ __proto__: null, log: makeLog('log'), info: makeLog('log'), debug: makeLog('log'), warn: makeLog('warn'), error: makeLog('error') });

  // tools: each call is a guest promise settled by deliver(); failures reject with a guest Error {code, message}.
  const calls = new MapC();
  let nextId = 1;
  let callCount = 0;
  const bridgeError = (code, message, details) => {
    const e = new E(S(message));
    defineProperty(e, 'code', { value: S(code), enumerable: true, writable: true, configurable: true });
    if (details !== undefined) defineProperty(e, 'details', { value: details, enumerable: true, writable: true, configurable: true });
    return e;
  };
  const request = (op, args) => new P((resolve, reject) => {
    if (callCount >= limits.maxCalls) { reject(bridgeError('sandbox.tooManyCalls', 'This run already made ' + limits.maxCalls + ' tools.* calls, the limit per run. Do more per call or narrow the search.')); return; }
    let json;
    try { json = stringify(convert(args, limits.maxArgBytes, 'strict')); }
    catch (x) {
      if (x === TooLarge) reject(bridgeError('sandbox.argsTooLarge', 'The arguments of tools.' + op + ' exceed ' + limits.maxArgBytes + ' bytes as JSON. Pass less data.'));
      else if (x === BadArgument) reject(bridgeError('sandbox.badArguments', 'The arguments of tools.' + op + ' are not plain JSON data: ' + badWhat + '. Pass only strings, numbers, booleans, null, arrays and plain objects; the call was not made.'));
      else reject(bridgeError('sandbox.badArguments', 'The arguments of tools.' + op + ' cannot be turned into JSON: ' + header(x) + '. The call was not made.'));
      return;
    }
    callCount++;
    const id = nextId++;
    apply(mapSet, calls, [id, { resolve, reject }]);
    emit('{"t":"req","id":' + id + ',"op":"' + op + '","args":' + json + '}');
  });
  const search = function search(query, opts) { return request('search', { __proto__: null, query, opts }); };
  const describe = function describe(id) { return request('describe', { __proto__: null, id }); };
  const call = function call(id, args) { return request('call', { __proto__: null, id, args }); };
  const tools = freeze({ search: freeze(search), describe: freeze(describe), call: freeze(call) });
  const openclaw = freeze({ tools });
  const queueMicrotask = freeze(function queueMicrotask(fn) { apply(then, P.resolve(), [() => { fn(); }]); });
  for (const [name, value] of [['tools', tools], ['openclaw', openclaw], ['console', console], ['queueMicrotask', queueMicrotask]]) {
    defineProperty(G, name, { value, writable: false, enumerable: false, configurable: false });
  }

  let done = false;
  const finishWith = (line) => { if (!done) { done = true; emit(line); } };
  return freeze({
    __proto__: null,
    /** Called by the host with primitives only. */
    deliver(id, ok, payload) {
      const p = apply(mapGet, calls, [id]);
      if (p === undefined) return;
      apply(mapDelete, calls, [id]);
      let v = null;
      try { v = parse(payload); } catch (x) {}
      if (ok) p.resolve(v);
      else p.reject(bridgeError(v && v.code || 'sandbox.bridgeFailed', v && v.message || 'The call failed.', v ? v.details : undefined));
    },
    drain() { const s = outbox; outbox = ''; return s; },
    setLimits(maxLogBytes, maxResultBytes, maxArgBytes, maxCalls) {
      limits.maxLogBytes = maxLogBytes; limits.maxResultBytes = maxResultBytes; limits.maxArgBytes = maxArgBytes; limits.maxCalls = maxCalls;
    },
    start(fn) {
      let r;
      try { r = fn(); } catch (x) { r = P.reject(x); }
      apply(then, r, [
        (value) => {
          let json;
          // A number, boolean, null, undefined or short string is its own JSON: convert would return it unchanged.
          const t = typeof value;
          if (value === null || value === undefined || t === 'boolean' || (t === 'number' && isFiniteN(value)) || (t === 'string' && value.length <= limits.maxResultBytes)) {
            finishWith('{"t":"result","value":' + (value === undefined ? 'null' : stringify(value)) + '}');
            return;
          }
          try { const c = convert(value, limits.maxResultBytes, 'cut'); json = stringify(c === undefined ? null : c); }
          catch (x) { finishWith('{"t":"error","code":"sandbox.resultNotSerializable","message":' + str('The return value could not be turned into JSON: ' + header(x)) + '}'); return; }
          finishWith('{"t":"result","value":' + json + '}');
        },
        (e) => {
          let message;
          if (e !== null && typeof e === 'object') {
            message = header(e);
            try { if (e.code !== undefined) message += ' (code ' + S(e.code) + ')'; } catch (x) {}
          } else {
            try { message = 'Uncaught ' + S(e); } catch (x) { message = 'Uncaught exception'; }
          }
          finishWith('{"t":"error","code":"sandbox.guestError","message":' + str(message) + '}');
        },
      ]);
    },
  });
})`;

// Compiled once: the guest's runtime and the rehearsal's throwaway copy (see `rehearse`) are two runs of one script,
// each in its own context, so they share its compiled code and no object.
const bootstrapScript = new vm.Script(BOOTSTRAP, { filename: 'bootstrap.js', importModuleDynamically });

/** Guest API: {deliver, drain, setLimits, start}, guest functions the host calls with primitives only. */
const guest = bootstrapScript.runInContext(context)();

function applyLimits(l) {
  for (const k of Object.keys(limits)) {
    if (Number.isSafeInteger(l?.[k]) && l[k] > 0) limits[k] = l[k];
  }
  guest.setLimits(limits.maxLogBytes, limits.maxResultBytes, limits.maxArgBytes, limits.maxCalls);
}

/** Hard cap behind the guest's own (approximate) one; room is left for the guest's truncation markers. */
function capResult(value) {
  const text = JSON.stringify(value);
  const bytes = Buffer.byteLength(text);
  if (bytes <= limits.maxResultBytes + MARKER_ROOM) return value;
  const kept = Buffer.from(text).subarray(0, limits.maxResultBytes).toString();
  return `${kept}…[truncated ${bytes - Buffer.byteLength(kept)} bytes]`;
}

const hostFunctionToString = Function.prototype.toString;

/** The parser's own message for a body that is not a function body on its own; compiling runs nothing. */
function bodySyntaxError(body) {
  try {
    // Parsed as a plain (not async) function body, so `await` is an error here that the real wrapper allows.
    vm.compileFunction(body, [], { filename: GUEST_FILE });
  } catch (e) {
    if (e instanceof SyntaxError && !/await/.test(e.message))
      return `SyntaxError: ${e.message} (the body must be the statements of one function body)`;
  }
  return "SyntaxError: Unexpected token '}': the body closes the function it runs in. Write statements only, ending with return.";
}

const hostResolved = Promise.resolve();

/**
 * One run's host side over a guest runtime `g` in its context `ctx`: the body compiled and started, bridge answers
 * delivered, the guest's outbox forwarded through `write` (whole lines), and the final message once. `afterFinal`
 * runs right after that last write. The real run and the rehearsal are two sessions made here, so the rehearsal runs the
 * very functions the request then runs.
 */
function openSession(g, ctx, write, afterFinal) {
  let finished = false;
  let started = false;
  const pending = new Set();
  let logBytes = 0;
  let logsCut = false;
  /** The pump queued for after this turn, if any (dropped once the run is finished). */
  let pumpQueued;
  let drainQueued = false;

  const send = (msg) => write(JSON.stringify(msg) + '\n');

  /**
   * The single way out: write the final message (a message, or its line already serialized), then wait for the
   * parent's SIGKILL, which comes right after it has read the message (see `afterFinal` of the real run).
   */
  const finish = (msg) => {
    if (finished) return;
    finished = true;
    // Nothing is left for the pump to do: dropped, so nothing runs here after the write.
    if (pumpQueued !== undefined) clearImmediate(pumpQueued);
    pumpQueued = undefined;
    write(typeof msg === 'string' ? msg + '\n' : JSON.stringify(msg) + '\n');
    afterFinal();
  };

  /** Ends the run: the guest broke its own runtime. Returns false (for `forward`). */
  const corrupt = (what) => {
    finish({ t: 'error', code: 'sandbox.guestError', message: `The body corrupted the sandbox runtime (${what}).` });
    return false;
  };

  const forwardLog = (m) => {
    if (logsCut || !LEVELS.has(m.level) || typeof m.text !== 'string') return;
    const bytes = Buffer.byteLength(m.text) + 1;
    if (logBytes + bytes > limits.maxLogBytes) {
      logsCut = true;
      const room = Math.max(0, limits.maxLogBytes - logBytes);
      if (room > 0) send({ t: 'log', level: m.level, text: Buffer.from(m.text).subarray(0, room).toString() });
      send({ t: 'log', level: 'warn', text: '[logs truncated]' });
      return;
    }
    logBytes += bytes;
    send({ t: 'log', level: m.level, text: m.text });
  };

  /** Forwards the guest's outbox to the parent; false when the run ended here (result, error or corruption). */
  const forward = () => {
    let out;
    try {
      out = g.drain();
    } catch {
      return corrupt('drain');
    }
    if (typeof out !== 'string') return corrupt('drain');
    for (const line of out.split('\n')) {
      if (line === '') continue;
      let m;
      try {
        m = JSON.parse(line);
      } catch {
        return corrupt('message');
      }
      if (m === null || typeof m !== 'object') return corrupt('message');
      if (m.t === 'log') forwardLog(m);
      else if (m.t === 'req') {
        if (
          !Number.isSafeInteger(m.id) ||
          pending.has(m.id) ||
          !OPS.has(m.op) ||
          m.args === null ||
          typeof m.args !== 'object'
        )
          return corrupt('request');
        if (Buffer.byteLength(line) > limits.maxArgBytes + 256) {
          g.deliver(
            m.id,
            false,
            JSON.stringify({
              code: 'sandbox.argsTooLarge',
              message: `The arguments of tools.${m.op} exceed ${limits.maxArgBytes} bytes as JSON.`,
            }),
          );
          schedulePump();
          continue;
        }
        pending.add(m.id);
        send({ t: 'req', id: m.id, op: m.op, args: m.args });
      } else if (m.t === 'result') {
        // A line that cannot exceed the cap (3 bytes per UTF-16 unit at most) goes on as the guest runtime wrote it
        // (its JSON just parsed): no second serialization. A longer one is measured and cut.
        if (line.length * 3 <= limits.maxResultBytes + MARKER_ROOM && m.value !== undefined) finish(line);
        else finish({ t: 'result', value: capResult(m.value ?? null) });
        return false;
      } else if (m.t === 'error' && typeof m.code === 'string' && typeof m.message === 'string') {
        finish({ t: 'error', code: m.code, message: m.message.slice(0, 4096) });
        return false;
      } else return corrupt('message');
    }
    return true;
  };

  const drainEarly = () => {
    drainQueued = false;
    // Still under way: the pump looks again after this turn. A body that settled without waiting is answered here,
    // and no pump is ever queued for it.
    if (!finished && forward() && pumpQueued === undefined) pumpQueued = setImmediate(pump);
  };

  const pump = () => {
    pumpQueued = undefined;
    if (finished || !forward()) return;
    if (pending.size === 0) {
      // The guest has no timers or I/O: with no tools.* call pending and the microtask queue empty, nothing can settle it.
      finish({
        t: 'error',
        code: 'sandbox.neverSettled',
        message:
          'The body awaits a promise that can never settle (no tools.* call is pending). Return a value or await a tools.* call.',
      });
    }
  };

  /**
   * After the guest ran, forward what it emitted: in a microtask queued behind the guest's own (a body that settles
   * without waiting is answered in the same turn), then, if the run is still under way, after the turn (microtasks
   * drained, see `drainEarly`), where a run with nothing left to wait for is found never to settle.
   */
  const schedulePump = () => {
    if (finished || drainQueued) return;
    drainQueued = true;
    // A host promise reaction, not queueMicrotask (which sets up an async resource per call).
    hostResolved.then(drainEarly);
  };

  const run = (body) => {
    started = true;
    let fn;
    const wrapped = `async function () {\n${body}\n}`;
    try {
      fn = new vm.Script(`(${wrapped})`, bodyOptions(body)).runInContext(ctx);
    } catch (e) {
      // Compile errors are raised host-side by vm; report the text only.
      const text = e instanceof Error ? `${e.name}: ${e.message}` : 'the body does not compile';
      return finish({ t: 'error', code: 'sandbox.guestError', message: text });
    }
    // A body that closes the function it is wrapped in (`}); (function(){`) compiles, but the script's value is
    // then another function (or none). Only the wrapper itself has exactly the wrapper's source text (the host
    // realm's toString, which guest code cannot replace): anything else is a syntax error of the body.
    let source;
    try {
      source = typeof fn === 'function' ? hostFunctionToString.call(fn) : undefined;
    } catch {
      source = undefined;
    }
    if (source !== wrapped) return finish({ t: 'error', code: 'sandbox.guestError', message: bodySyntaxError(body) });
    try {
      g.start(fn);
    } catch {
      return corrupt('start');
    }
    schedulePump();
  };

  /** A message for the run: the run itself (once), then bridge answers to its pending requests. */
  const onMessage = (m) => {
    if (m?.t === 'run' && !started && typeof m.body === 'string') run(m.body);
    else if (m?.t === 'res' && started && pending.has(m.id)) {
      pending.delete(m.id);
      const payload = m.ok ? JSON.stringify(m.value ?? null) : JSON.stringify(m.error ?? {});
      try {
        g.deliver(m.id, m.ok === true, payload);
      } catch {
        return corrupt('deliver');
      }
      schedulePump();
    }
  };
  /** Whether the pump is queued for this turn (the reader waits for it: it may find the run never settles). */
  onMessage.pumpQueued = () => pumpQueued !== undefined;
  return onMessage;
}

/**
 * A reader of newline-delimited JSON in byte chunks (`(bytes, length)`), each parsed line handed to `onMessage`; bad
 * lines skipped. Lines are decoded whole, so a character split across two reads stays intact.
 */
function lineReader(onMessage) {
  let parts = [];
  const deliver = (line) => {
    let m;
    try {
      m = JSON.parse(line);
    } catch {
      return;
    }
    onMessage(m);
  };
  return (bytes, length) => {
    let start = 0;
    for (let nl = bytes.indexOf(10, 0); nl >= 0 && nl < length; nl = bytes.indexOf(10, start)) {
      if (parts.length === 0) deliver(bytes.toString('utf8', start, nl));
      else {
        parts.push(Buffer.from(bytes.subarray(start, nl)));
        const line = Buffer.concat(parts).toString('utf8');
        parts = [];
        deliver(line);
      }
      start = nl + 1;
    }
    // The rest of a line that goes on in the next read (copied: the read buffer is reused).
    if (start < length) parts.push(Buffer.from(bytes.subarray(start, length)));
  };
}

/**
 * After the answer: wait for the parent's SIGKILL, which comes right after it has read the answer, and exit after a
 * second anyway if none came. Exiting right away would put the teardown of this process (milliseconds of CPU)
 * beside the parent's handling of the answer. The wait blocks this thread at once (`Atomics.wait`), so the process
 * is off its CPU as soon as the line is out: the parent, woken by that write, finds the CPU free instead of waiting
 * for this process to unwind its turn. The write is blocking (see `writeOut`): the line is all in the pipe by then.
 */
const sleepUntilKilled = () => {
  Atomics.wait(asleep, 0, 0, 1000);
  process.exit(0);
};

/** The real run: the guest's runtime in its context, its lines to stdout. */
const session = openSession(guest, context, writeOut, sleepUntilKilled);

let hello = false;

/** Lines from the parent: its hello first (the run's limits), then the run and the answers to its bridge calls. */
const readParent = lineReader((m) => {
  if (m?.t === 'hello' && !hello) {
    // The parent's first line, written at spawn: the run's limits, set here ahead of the request.
    hello = true;
    applyLimits(m.limits);
    writeOut('{"t":"ready"}\n');
  } else if (hello) session(m);
});
const readBuffer = Buffer.allocUnsafe(65536);

/**
 * Reads what the parent writes, blocking this thread until it comes: the child has nothing else to wait for (the guest
 * has no timers and no I/O; its bridge calls are answered here). One read per turn of the event loop, so that what a
 * line started (the guest's microtasks, the forwarding of its lines) runs before the next read; a pump queued for this
 * turn (see `openSession`) runs first too, as it may find the run can never settle.
 */
function serve() {
  if (session.pumpQueued()) {
    setImmediate(serve);
    return;
  }
  let n;
  try {
    n = readSync(0, readBuffer, 0, readBuffer.length, null);
  } catch (e) {
    if (e?.code !== 'EAGAIN' && e?.code !== 'EINTR') process.exit(0);
    Atomics.wait(asleep, 0, 0, 1);
    n = -1;
  }
  // The parent went away (or closed our stdin): nothing left to serve.
  if (n === 0) process.exit(0);
  if (n > 0) readParent(readBuffer, n);
  setImmediate(serve);
}

/**
 * The run path, once, before the request: a throwaway body (`return 'rehearsal'`, a text no request is expected to
 * send, so that a request's compile finds nothing of it in V8's compilation cache) through a session of its own, on a throwaway
 * copy of the runtime (the same compiled script run in a context of its own) whose lines go nowhere; the guest's
 * context and runtime stay untouched. A fresh process otherwise pays on the request for the first use of every
 * function on that path: the line reader, the compiler, the vm calls, the runtime's functions, the forwarding of its
 * lines and the wait after the answer.
 */
function rehearse() {
  const ctx = newGuestContext();
  const g = bootstrapScript.runInContext(ctx)();
  g.setLimits(limits.maxLogBytes, limits.maxResultBytes, limits.maxArgBytes, limits.maxCalls);
  let answered = false;
  const read = lineReader(
    openSession(
      g,
      ctx,
      (line) => {
        if (line.startsWith('{"t":"result"')) answered = true;
      },
      () => Atomics.wait(asleep, 0, 0, 0),
    ),
  );
  const line = Buffer.from('{"t":"run","body":"return \'rehearsal\'"}\n');
  read(line, line.length);
  return new Promise((resolve) => setImmediate(() => resolve(answered)));
}

// Served either way once the rehearsal is over: a rehearsal that failed only leaves the first use to the request. The
// parent's hello, written at spawn, is the first line read; the child answers it with `ready`.
const rehearsal = (() => {
  try {
    return rehearse();
  } catch {
    return Promise.resolve(false);
  }
})();
rehearsal.then(serve, serve);
