"use strict";
// mcptap report viewer: no network, no dependencies. Data: #mcptap-data (mcptap/show/html.py).
(function () {
  const T0 = performance.now();
  const dataEl = document.getElementById("mcptap-data");
  const D = JSON.parse(dataEl.textContent);
  dataEl.textContent = "";     // the parsed copy is all we need: free the text (tens of MB on big captures)
  const R = D.rows, P = D.payloads, OPS = D.ops;
  // row fields (mcptap/show/html.py report_data)
  const SEQ = 0, TUS = 1, TYPE = 2, DIR = 3, KIND = 4, METHOD = 5, ID = 6, HASID = 7, PAIR = 8, LAT = 9, PHASE = 10,
    SESSION = 11, Q = 12, TOOL = 13, FINDINGS = 14, LINE = 15, HASJSON = 16, REFUSED = 17,
    METHOD_SHOWN = 18, TOOL_SHOWN = 19,     // method and tool escaped as mcptap shows peer text (labels); the filter reads the exact ones
    MEMBERS = 20, QCTX = 21,                // a batch's members (rows of the same layout); a request context given whole (a member's)
    MTEXT = 22, MEMBER = 23;                // a member row's text (what ~t and ~j read) and index
  const bySeq = new Map();
  for (let i = 0; i < R.length; i++) if (R[i][SEQ] != null) bySeq.set(R[i][SEQ], i);
  const $ = (id) => document.getElementById(id);
  // peer text as mcptap shows it (mcptap/escape.py, whose table D.escape is): every control, format, bidi,
  // line-separator, private-use and unassigned character (a lone surrogate too) as a visible escape
  const cp = (n) => "\\u{" + n.toString(16) + "}";
  const ESC_RX = new RegExp("[" + D.escape.map(([a, b]) => a === b ? cp(a) : cp(a) + "-" + cp(b)).join("") + "]", "gu");
  const NAMED = { "\t": "\\t", "\n": "\\n", "\r": "\\r" };
  const hex = (n, w) => n.toString(16).padStart(w, "0");
  function escOne(c) {     // as escape.py's escape_controls: a lone surrogate "\\udc80", as JSON and id_text write it
    if (NAMED[c]) return NAMED[c];
    const n = c.codePointAt(0);
    return n < 0x100 ? "\\x" + hex(n, 2) : n <= 0xFFFF ? "\\u" + hex(n, 4) : "\\U" + hex(n, 8);
  }
  const esc = (s) => String(s).replace(ESC_RX, escOne);
  // JSON text laid out by this page (pretty, JSON.stringify, the extra records): its line breaks are the layout's,
  // a peer's are escapes inside its strings already
  const escLayout = (s) => String(s).split("\n").map(esc).join("\n");
  const el = (tag, attrs, text) => {
    const e = document.createElement(tag);
    if (attrs) for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (text != null) e.textContent = tag === "pre" ? escLayout(text) : esc(text);   // textContent only: peer text is never HTML
    return e;
  };
  const textNode = (t) => document.createTextNode(esc(t));

  // ---- the filter language: a port of mcptap/filters (parse.py + operators.py) ----
  class FilterError extends Error { constructor(msg, col) { super(msg); this.col = col; } }
  class ArgError extends Error { constructor(msg, off) { super(msg); this.off = off || 0; } }
  const SPECIAL = "()&|!";
  const isWs = (c) => /\s/.test(c);
  function lexer(expr) {
    let pos = 0, peeked = null;
    const skip = () => { while (pos < expr.length && isWs(expr[pos])) pos++; };
    function word(stop, balance) {
      const start = pos; let i = pos, depth = 0; const text = [];
      while (i < expr.length && !isWs(expr[i])) {
        const ch = expr[i];
        if (stop.includes(ch)) break;
        if (balance) {
          if (ch === "(") depth++;
          else if (ch === ")") { if (depth === 0) break; depth--; }
        }
        if (ch === '"' || ch === "'") {
          let j = i + 1;
          while (j < expr.length && expr[j] !== ch) {
            if (expr[j] === "\\" && j + 1 < expr.length) j++;
            text.push(expr[j]); j++;
          }
          if (j >= expr.length) throw new FilterError(`unterminated ${ch} string`, i + 1);
          i = j + 1; continue;
        }
        if (ch === "\\" && i + 1 < expr.length) { text.push(expr[i + 1]); i += 2; continue; }
        text.push(ch); i++;
      }
      pos = i;
      return { kind: "word", text: text.join(""), raw: expr.slice(start, i), col: start + 1 };
    }
    function next() {
      skip();
      if (pos >= expr.length) return null;
      const c = expr[pos];
      if (SPECIAL.includes(c)) { pos++; return { kind: c, text: c, raw: c, col: pos }; }
      if (c === "~") {
        const m = /^~[A-Za-z0-9_]*/.exec(expr.slice(pos));
        const start = pos; pos += m[0].length;
        return { kind: "op", text: m[0], raw: m[0], col: start + 1 };
      }
      return word(SPECIAL, false);
    }
    return {
      peek() { if (peeked === null) peeked = next(); return peeked; },
      take() { const t = this.peek(); peeked = null; return t; },
      argument() {
        skip();
        if (pos >= expr.length || ")&|".includes(expr[pos])) return null;
        return word("", true);
      },
      get pos() { return pos; },
      word,
    };
  }
  function outerQuoted(raw) {   // the inside of an argument quoted as a whole, or null
    if (raw.length < 2 || (raw[0] !== '"' && raw[0] !== "'")) return null;
    const q = raw[0]; let out = "", i = 1;
    while (i < raw.length && raw[i] !== q) { if (raw[i] === "\\" && i + 1 < raw.length) i++; out += raw[i]; i++; }
    return i === raw.length - 1 ? out : null;
  }
  function unquote(s) {
    if (!s || !/["'\\]/.test(s)) return s;
    return lexer(s).word("", false).text;
  }
  function globRx(pat) {   // fnmatch.translate: * ? [seq] [!seq], whole-string match
    let out = "", i = 0;
    while (i < pat.length) {
      const c = pat[i++];
      if (c === "*") out += "[\\s\\S]*";
      else if (c === "?") out += "[\\s\\S]";
      else if (c === "[") {
        let j = i;
        if (j < pat.length && pat[j] === "!") j++;
        if (j < pat.length && pat[j] === "]") j++;
        while (j < pat.length && pat[j] !== "]") j++;
        if (j >= pat.length) out += "\\[";
        else {
          let stuff = pat.slice(i, j).replace(/\\/g, "\\\\");
          i = j + 1;
          if (stuff[0] === "!") stuff = "^" + stuff.slice(1);
          else if (stuff[0] === "^") stuff = "\\" + stuff;
          out += "[" + stuff + "]";
        }
      } else out += c.replace(/[.*+?^${}()|[\]\\\/]/g, "\\$&");   // not "-": "\-" is a syntax error in u-mode
    }
    return new RegExp("^(?:" + out + ")$", "u");
  }
  function glob(pat) {
    if (/[*?[]/.test(pat)) { const rx = globRx(pat); return (s) => rx.test(s); }
    return (s) => s === pat;
  }
  function pyRegex(src, off) {
    // no "u" flag: like Python's re, an escaped punctuation character ("\-", "\/") is just that character
    try { return new RegExp(src.replace(/\(\?P</g, "(?<").replace(/\(\?P=(\w+)\)/g, "\\k<$1>")); }
    catch (e) { throw new ArgError("bad regular expression: " + e.message, off || 0); }
  }
  // a predicate is p(r, i): r a row (R[i], or a batch member's row with i = -1), as filters/operators.py's pred(record, request)
  const reqOf = (r) => {
    const c = r[QCTX]; if (c) return { method: c[0], tool: c[1] };
    const q = r[Q]; if (q == null) return null; const j = bySeq.get(q); return j == null ? { method: null, tool: null } : { method: R[j][METHOD], tool: R[j][TOOL] };
  };
  const isMsg = (r) => r[TYPE] === "message";
  function text(r, i) { return i < 0 ? r[MTEXT] : P[i]; }
  const jsonCache = new Map();
  function json(r, i) {
    if (!isMsg(r) || !r[HASJSON]) return undefined;
    if (i < 0) { if (!("jv" in r)) { try { r.jv = JSON.parse(r[MTEXT]); } catch (e) { r.jv = undefined; } } return r.jv; }
    if (jsonCache.has(i)) return jsonCache.get(i);
    let v; try { v = JSON.parse(P[i]); } catch (e) { v = undefined; }
    if (jsonCache.size > 20000) jsonCache.clear();
    jsonCache.set(i, v);
    return v;
  }
  function pathParse(path) {
    const out = []; let i = 0; const n = path.length;
    if (!path) throw new ArgError("empty JSON path");
    while (i < n) {
      if (path[i] === "[") {
        const j = path.indexOf("]", i);
        if (j < 0) throw new ArgError("unclosed '[' in JSON path", i);
        const inner = path.slice(i + 1, j);
        if (inner === "*") out.push("*");
        else if (/^-?\d+$/.test(inner)) out.push(parseInt(inner, 10));
        else throw new ArgError("index in [] must be a number or *", i + 1);
        i = j + 1;
      } else {
        let j = i;
        while (j < n && path[j] !== "." && path[j] !== "[") j++;
        const seg = path.slice(i, j);
        if (!seg) throw new ArgError("empty segment in JSON path", i);
        out.push(/^\d+$/.test(seg) ? parseInt(seg, 10) : seg);
        i = j;
      }
      if (i < n && path[i] === ".") { i++; if (i === n) throw new ArgError("JSON path ends with '.'", i); }
    }
    return out;
  }
  function walk(v, path) {
    let cur = v === undefined ? [] : [v];
    for (const part of path) {
      const nxt = [];
      for (const x of cur) {
        if (part === "*") {
          if (Array.isArray(x)) nxt.push(...x);
          else if (x && typeof x === "object") nxt.push(...Object.values(x));
        } else if (x && typeof x === "object" && !Array.isArray(x)) {
          const k = String(part);
          if (Object.prototype.hasOwnProperty.call(x, k)) nxt.push(x[k]);
        } else if (Array.isArray(x) && typeof part === "number" && part >= -x.length && part < x.length) {
          nxt.push(x[part < 0 ? x.length + part : part]);
        }
      }
      cur = nxt;
      if (!cur.length) break;
    }
    return cur;
  }
  function same(a, b) {
    if (typeof a === "boolean" || typeof b === "boolean") return typeof a === "boolean" && typeof b === "boolean" && a === b;
    if (typeof a === "number" && typeof b === "number") return a === b;
    if (a === null || b === null) return a === b;
    if (Array.isArray(a) || Array.isArray(b)) return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, k) => same(x, b[k]));
    if (typeof a === "object" && typeof b === "object") {
      const ka = Object.keys(a), kb = Object.keys(b);
      return ka.length === kb.length && ka.every((k) => Object.prototype.hasOwnProperty.call(b, k) && same(a[k], b[k]));
    }
    return typeof a === typeof b && a === b;
  }
  const pyJson = (v) => JSON.stringify(v);
  const CMP = { ">": (a, b) => a > b, ">=": (a, b) => a >= b, "<": (a, b) => a < b, "<=": (a, b) => a <= b, "=": (a, b) => a === b, "==": (a, b) => a === b, "!=": (a, b) => a !== b };
  const methodOf = (r) => { let m = r[METHOD]; if (m == null && (r[KIND] === "response" || r[KIND] === "error")) { const q = reqOf(r); if (q) m = q.method; } return m; };
  const textPred = (s) => { const needle = s.toLowerCase(); return (r, i) => text(r, i).toLowerCase().includes(needle); };
  const BUILD = {
    "~m": (t) => { const rx = pyRegex(t.text); return (r) => { const m = methodOf(r); return m != null && rx.test(m); }; },
    "~tool": (t) => { const g = glob(t.text); return (r) => { if (!isMsg(r)) return false; let name = r[TOOL]; if (name == null) { const q = reqOf(r); if (q && q.method === "tools/call" && r[METHOD] !== "tools/call") name = q.tool; } return name != null && g(name); }; },
    "~id": (t) => (r) => { if (!r[HASID]) return false; const v = r[ID]; return (typeof v === "string" ? v : pyJson(v)) === t.text; },
    "~phase": (t) => { const g = glob(t.text); return (r) => typeof r[PHASE] === "string" && (g(r[PHASE]) || (OPS.phases[r[PHASE]] != null && g(OPS.phases[r[PHASE]]))); },
    "~session": (t) => { const g = glob(t.text); return (r) => typeof r[SESSION] === "string" && g(r[SESSION]); },
    "~f": (t) => { let pat = t.text; if (!/[*?[.]/.test(pat)) pat += ".*"; const g = glob(pat); return (r) => r[FINDINGS].some((f) => g(f[0] || "")); },
    "~sev": (t) => { const rank = OPS.severity[t.text.toLowerCase()]; if (rank === undefined) throw new ArgError(`severity must be error, warn or info, not '${t.text}'`); return (r) => r[FINDINGS].some((f) => (OPS.severity[f[1] || ""] ?? -1) >= rank); },
    "~lat": (t) => {
      const m = /^(>=|<=|>|<|=|==)?\s*(\d+(?:\.\d*)?|\.\d+)\s*(us|µs|ms|s)?$/u.exec(t.text.trim());
      if (!m) throw new ArgError(`latency must look like >100ms, <=2s, >500us (unit defaults to ms), not '${t.text}'`);
      const cmp = CMP[m[1] || ">="], bound = parseFloat(m[2]) * OPS.units[m[3] || ""];
      return (r) => Number.isInteger(r[LAT]) && cmp(r[LAT], bound);
    },
    "~t": (t) => textPred(t.text),
    "~j": (t) => {
      // as operators.py: an argument quoted as a whole is read inside its quotes;
      // the comparison is the first operator outside quotes
      let raw = t.raw, cut = -1, op = null, shift = 0;
      const inner = outerQuoted(raw);
      if (inner !== null) { raw = inner; shift = 1; }
      let quote = null;
      outer: for (let i = 0; i < raw.length; i++) {
        const c = raw[i];
        if (quote !== null) { if (c === "\\") i++; else if (c === quote) quote = null; continue; }
        if (c === '"' || c === "'") { quote = c; continue; }
        if (c === "\\") { i++; continue; }
        for (const o of OPS.jops) if (raw.startsWith(o, i)) { cut = i; op = o; break outer; }
      }
      const path = pathParse(unquote(op === null ? raw : raw.slice(0, cut)));
      if (op === null) return (r, i) => isMsg(r) && walk(json(r, i), path).length > 0;
      const lit = raw.slice(cut + op.length);
      let want; try { want = JSON.parse(lit); } catch (e) { want = unquote(lit); }
      let test;
      if (op === "~=") { const rx = pyRegex(typeof want === "string" ? want : lit, shift + cut + 2); test = (v) => rx.test(typeof v === "string" ? v : pyJson(v)); }
      else if (op === "=" || op === "!=") test = (v) => same(v, want);
      else {
        if (typeof want !== "number") throw new ArgError(`${op} needs a number, not '${lit}'`, shift + cut + op.length);
        const cmp = CMP[op]; test = (v) => typeof v === "number" && cmp(v, want);
      }
      if (op === "!=") return (r, i) => { if (!isMsg(r)) return false; const vals = walk(json(r, i), path); return vals.length > 0 && !vals.some(test); };
      return (r, i) => isMsg(r) && walk(json(r, i), path).some(test);
    },
  };
  const NULLARY = {};
  for (const op of OPS.nullary) {
    if (OPS.kinds[op]) {
      const ks = OPS.kinds[op], batch = ks.includes("batch");    // a batch's members are in a batch too
      NULLARY[op] = (r) => isMsg(r) && (ks.includes(r[KIND]) || (batch && r[MEMBER] != null));
    }
    else if (OPS.dirs[op]) { const d = OPS.dirs[op]; NULLARY[op] = (r) => isMsg(r) && r[DIR] === d; }
  }
  const UNARY = {};
  for (const op of OPS.unary) if (BUILD[op]) UNARY[op] = BUILD[op];
  function compile(expr) {
    const lx = lexer(expr);
    const endCol = expr.length + 1;
    function orP() { const parts = [andP()]; while (lx.peek() && lx.peek().kind === "|") { lx.take(); parts.push(andP()); } return parts.length === 1 ? parts[0] : (r, i) => parts.some((p) => p(r, i)); }
    function andP() {
      const parts = [notP()];
      for (let t = lx.peek(); t && t.kind !== "|" && t.kind !== ")"; t = lx.peek()) { if (t.kind === "&") lx.take(); parts.push(notP()); }
      return parts.length === 1 ? parts[0] : (r, i) => parts.every((p) => p(r, i));
    }
    function notP() { const t = lx.peek(); if (t && t.kind === "!") { lx.take(); const inner = notP(); return (r, i) => !inner(r, i); } return atom(); }
    function atom() {
      const t = lx.peek();
      if (!t) throw new FilterError("expression expected at end of filter", endCol);
      if (t.kind === "(") {
        lx.take(); const p = orP(); const close = lx.peek();
        if (!close || close.kind !== ")") throw new FilterError(`')' expected to close the '(' at column ${t.col}`, close ? close.col : endCol);
        lx.take(); return p;
      }
      if (t.kind === ")" || t.kind === "&" || t.kind === "|") throw new FilterError(`expression expected before '${t.raw}'`, t.col);
      lx.take();
      if (t.kind === "word") return textPred(t.text);
      if (NULLARY[t.raw]) return NULLARY[t.raw];
      if (!UNARY[t.raw]) {
        const known = OPS.unary.includes(t.raw) || OPS.nullary.includes(t.raw);
        throw new FilterError(known ? `filter '${t.raw}' is not available in this report (use mcptap show)` : `unknown filter '${t.raw}'`, t.col);
      }
      const arg = lx.argument();
      if (!arg) throw new FilterError(`${t.raw} needs an argument`, lx.pos + 1);
      try { return UNARY[t.raw](arg); }
      catch (e) { if (e instanceof ArgError) throw new FilterError(e.message, arg.col + e.off); throw e; }
    }
    if (!lx.peek()) throw new FilterError("empty filter", 1);
    const p = orP();
    const t = lx.peek();
    if (t) throw new FilterError(`unexpected '${t.raw}'` + (t.kind === ")" ? " (no matching '(')" : ""), t.col);
    // row i matches when it or one of its batch members does (operators.Filter)
    return (i) => { const r = R[i]; if (p(r, i)) return true; const ms = r[MEMBERS]; return !!ms && ms.some((m) => p(m, -1)); };
  }
  window.mcptapCompileFilter = compile;

  // ---- header, findings ----
  const meta = D.meta;
  $("title").textContent = esc(meta.name || meta.path || "");
  $("cols").textContent = meta.columns;
  function dl(pairs) {
    const d = el("dl");
    for (const [k, v] of pairs) { if (v == null || v === "") continue; d.append(el("dt", null, k)); const dd = el("dd"); if (v instanceof Node) dd.append(v); else dd.textContent = esc(v); d.append(dd); }
    return d;
  }
  function jsonDetails(label, v) { const d = el("details"); d.append(el("summary", null, label)); d.append(el("pre", null, JSON.stringify(v, null, 2))); return d; }
  const tgt = meta.target || {};
  const scrub = el("span", { class: meta.scrubbed ? "badge ok" : "badge raw" }, meta.scrubbed ? "scrubbed: secrets are keyed placeholders" : "NOT scrubbed: may contain secrets");
  const end = meta.end;
  const headPairs = [["capture", meta.path], ["transport", meta.transport], ["target", Array.isArray(tgt.argv) ? tgt.argv.join(" ") : (tgt.url || tgt.upstream || "")],
    ["started", meta.started], ["mcptap", meta.mcptap], ["revision", (meta.revisions || []).join(", ")], ["records", String(R.length)], ["privacy", scrub]];
  if (end) {
    // a scrubbed capture's digests are over the scrubbed bytes; what the tap forwarded is in end.original
    const sent = (d) => { const o = end.original && end.original[d], s = end[d]; if (!s) return "?";
      return `${s.messages} messages, ${o && o.bytes != null ? o.bytes + " bytes" + (o.bytes !== s.bytes ? ` (${s.bytes} as scrubbed)` : "") : s.bytes + " bytes"}`; };
    headPairs.push(["traffic", `c2s ${sent("c2s")}; s2c ${sent("s2c")}`]);
    if (end.exit_code != null) headPairs.push(["exit", String(end.exit_code)]);
    if (end.pending && end.pending.length) headPairs.push(["pending", end.pending.map((p) => `#${p.seq} ${p.method || ""}`).join(", ")]);
  } else headPairs.push(["end", "no end record: the capture was cut short"]);
  $("meta").append(dl(headPairs));
  for (const s of meta.sessions || []) {
    const box = el("div", { class: "session" });
    const c = s.client || {}, sv = s.server || {};
    const who = (x) => x ? `${x.name || "?"} ${x.version || ""}`.trim() : "?";
    box.append(el("h2", null, `session ${s.label}: ${who(c.clientInfo)} → ${who(sv.serverInfo)}, revision ${s.revision || "?"} (${s.via})`));
    if (c.capabilities) box.append(jsonDetails("client capabilities", c.capabilities));
    if (sv.capabilities) box.append(jsonDetails("server capabilities", sv.capabilities));
    if (sv.instructions) box.append(jsonDetails("server instructions", sv.instructions));
    $("meta").append(box);
  }
  const fbox = $("findings");
  fbox.append(el("h2", null, "Findings"));
  let anyFinding = false;
  for (const sev of ["error", "warn", "info"]) {
    const groups = D.findings[sev] || [];
    if (!groups.length) continue;
    anyFinding = true;
    const total = groups.reduce((a, g) => a + g.count, 0);
    const det = el("details", { class: "sev-" + sev }); if (sev !== "info") det.open = true;
    det.append(el("summary", null, `${sev}: ${total} finding(s), ${groups.length} code(s)`));
    for (const g of groups) {
      const box = el("div", { class: "code", "data-code": g.code });
      box.append(el("b", null, g.code), textNode(` ×${g.count} — ${g.meaning || ""} `), el("span", { class: "src" }, g.source || ""));
      const ul = el("ul");
      for (const [seq, t, msg] of g.places) {
        const li = el("li"); const a = el("a", null, seq != null ? `#${seq}` : "end"); a.onclick = () => jumpTo(seq); li.append(a, textNode(` ${((t || 0) / 1e6).toFixed(3)}s ${msg}`)); ul.append(li);
      }
      if (g.count > g.places.length) ul.append(el("li", null, `… ${g.count - g.places.length} more (filter: ~f ${g.code})`));
      box.append(ul); det.append(box);
    }
    fbox.append(det);
  }
  if (!anyFinding) fbox.append(el("p", null, "No findings."));

  // ---- timeline: virtual list ----
  const ROWH = 18, tl = $("timeline"), spacer = $("spacer");
  let view = R.map((_, i) => i), selected = -1, pairSel = -1;
  const pool = new Map();
  function cls(i) {
    const r = R[i]; let c = "row " + (isMsg(r) ? r[DIR] : "other");
    const fs = r[FINDINGS]; if (fs.some((f) => f[1] === "error")) c += " error"; else if (fs.some((f) => f[1] === "warn")) c += " warn";
    if (i === selected) c += " sel"; else if (i === pairSel) c += " pair";
    return c;
  }
  function render() {
    spacer.style.height = view.length * ROWH + "px";
    const first = Math.max(0, Math.floor(tl.scrollTop / ROWH) - 5), last = Math.min(view.length, first + Math.ceil(tl.clientHeight / ROWH) + 10);
    const keep = new Set();
    for (let k = first; k < last; k++) {
      const i = view[k]; keep.add(i);
      let e = pool.get(i);
      if (!e) { e = el("div", { "data-i": String(i), "data-seq": String(R[i][SEQ]) }, R[i][LINE]); e.onclick = () => select(i); pool.set(i, e); spacer.append(e); }
      e.className = cls(i); e.style.top = k * ROWH + "px";
    }
    for (const [i, e] of pool) if (!keep.has(i)) { e.remove(); pool.delete(i); }
    scheduleDiagram(first + 5);
  }
  let raf = 0;
  tl.addEventListener("scroll", () => { if (!raf) raf = requestAnimationFrame(() => { raf = 0; render(); }); });
  window.addEventListener("resize", () => render());
  function pairOf(i) {
    const r = R[i];
    if (r[PAIR] != null) return bySeq.get(r[PAIR]) ?? -1;
    if (r[KIND] === "request") { for (let j = i + 1; j < R.length && j < i + 50000; j++) if (R[j][PAIR] === r[SEQ]) return j; }
    return -1;
  }
  function select(i) {
    selected = i; pairSel = pairOf(i);
    for (const [j, e] of pool) e.className = cls(j);
    const r = R[i], d = $("detail"); d.textContent = "";
    d.append(el("h3", null, r[LINE].trim()));
    if (pairSel >= 0) { const a = el("a", null, (r[KIND] === "request" ? "response #" : "request #") + R[pairSel][SEQ] + (r[LAT] != null ? ` (latency ${(r[LAT] / 1000).toFixed(1)} ms)` : "")); a.onclick = () => jumpTo(R[pairSel][SEQ]); d.append(el("p"), a); }
    const q = r[Q] != null && r[KIND] !== "response" && r[KIND] !== "error" ? r[Q] : null;
    if (q != null) { const a = el("a", null, "belongs to request #" + q); a.onclick = () => jumpTo(q); d.append(el("p"), a); }
    for (const f of r[FINDINGS]) d.append(el("p", { class: "f-" + f[1] }, `${f[1]} ${f[0]}`));
    let body = P[i], layout = false;
    if (r[HASJSON]) { try { JSON.parse(body); body = pretty(body); layout = true; } catch (e) { /* raw text stays */ } }
    else if (!isMsg(r) && r[TYPE] !== "stderr" && D.extra && D.extra[i]) { body = D.extra[i]; layout = true; }
    const pane = el("pre", { class: "payload" });
    pane.textContent = layout ? escLayout(body) : esc(body);      // text that is not JSON: its line breaks are a peer's too
    d.append(pane);
  }
  // JSON.stringify(JSON.parse(t), null, 2) without the round trip through doubles: an id or a
  // number beyond 2^53 (or 1e400) shows as the peer sent it, as in the row; t is valid JSON
  function pretty(t) {
    const out = [], n = t.length, WS = " \t\n\r", END = ",:]} \t\n\r";
    let depth = 0, i = 0;
    const pad = () => "\n" + "  ".repeat(depth);
    while (i < n) {
      const c = t[i];
      if (c === '"') { let j = i + 1; while (j < n && t[j] !== '"') j += t[j] === "\\" ? 2 : 1; out.push(t.slice(i, j + 1)); i = j + 1; }
      else if (WS.includes(c)) i++;
      else if (c === "{" || c === "[") {
        let j = i + 1; while (j < n && WS.includes(t[j])) j++;
        if (t[j] === (c === "{" ? "}" : "]")) { out.push(c + t[j]); i = j + 1; } else { depth++; out.push(c + pad()); i++; }
      }
      else if (c === "}" || c === "]") { depth--; out.push(pad() + c); i++; }
      else if (c === ",") { out.push("," + pad()); i++; }
      else if (c === ":") { out.push(": "); i++; }
      else { let j = i; while (j < n && !END.includes(t[j])) j++; out.push(t.slice(i, j)); i = j; }
    }
    return out.join("");
  }
  function jumpTo(seq) {
    const i = bySeq.get(seq); if (i == null) return;
    let k = view.indexOf(i);
    if (k < 0) { $("filter").value = ""; applyFilter(""); k = view.indexOf(i); }
    tl.scrollTop = Math.max(0, k * ROWH - tl.clientHeight / 3); render(); select(i); tl.focus();
  }
  tl.addEventListener("keydown", (ev) => {
    if (ev.key !== "ArrowDown" && ev.key !== "ArrowUp") return;
    ev.preventDefault();
    let k = view.indexOf(selected); k = ev.key === "ArrowDown" ? Math.min(view.length - 1, k + 1) : Math.max(0, k - 1);
    if (k >= 0 && view.length) { select(view[k]); const y = k * ROWH; if (y < tl.scrollTop || y > tl.scrollTop + tl.clientHeight - ROWH) tl.scrollTop = y - tl.clientHeight / 2; render(); }
  });

  // ---- filter box ----
  function applyFilter(expr) {
    $("ferr").textContent = "";
    if (!expr.trim()) view = R.map((_, i) => i);
    else {
      let p;
      try { p = compile(expr); }
      catch (e) {
        if (!(e instanceof FilterError)) throw e;
        $("ferr").textContent = `bad filter at column ${e.col}: ${e.message}\n  ${expr}\n  ${" ".repeat(e.col - 1)}^`;
        document.body.dataset.filterError = e.message;
        return false;
      }
      const out = []; for (let i = 0; i < R.length; i++) if (p(i)) out.push(i);
      view = out;
    }
    delete document.body.dataset.filterError;
    $("count").textContent = `${view.length} of ${R.length} records`;
    for (const [, e] of pool) e.remove(); pool.clear();
    tl.scrollTop = 0; render();
    return true;
  }
  let ftimer = 0;
  $("filter").addEventListener("input", () => { clearTimeout(ftimer); ftimer = setTimeout(() => applyFilter($("filter").value), 200); });
  $("filter").addEventListener("keydown", (ev) => { if (ev.key === "Enter") { clearTimeout(ftimer); applyFilter($("filter").value); } });

  // ---- sequence diagram (SVG) of the messages from the top of the view ----
  const SVGNS = "http://www.w3.org/2000/svg", MAXARROWS = 40;
  let dtimer = 0, dfrom = -1;
  function scheduleDiagram(from) { if (from === dfrom) return; clearTimeout(dtimer); dtimer = setTimeout(() => diagram(from), 60); }
  function sv(tag, attrs, text) { const e = document.createElementNS(SVGNS, tag); for (const k in attrs) e.setAttribute(k, attrs[k]); if (text != null) e.textContent = esc(text); return e; }
  function diagram(from) {
    dfrom = from;
    const msgs = [];
    for (let k = Math.max(0, Math.min(from, view.length - 1)); k < view.length && msgs.length < MAXARROWS; k++) if (isMsg(R[view[k]])) msgs.push(view[k]);
    const W = 760, CX = 140, SX = 620, top = 40, step = 30, H = top + msgs.length * step + 20;
    const svg = sv("svg", { width: W, height: H, viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": "sequence diagram" });
    const defs = sv("defs", {});
    for (const c of ["c2s", "s2c", "err"]) { const m = sv("marker", { id: "ah-" + c, viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" }); m.append(sv("path", { d: "M0,0 L10,5 L0,10 z", class: "m-" + c })); defs.append(m); }
    svg.append(defs);
    svg.append(sv("text", { x: CX - 20, y: 18 }, "Client"), sv("text", { x: SX - 20, y: 18 }, "Server"));
    svg.append(sv("line", { x1: CX, y1: 26, x2: CX, y2: H - 6, class: "life" }), sv("line", { x1: SX, y1: 26, x2: SX, y2: H - 6, class: "life" }));
    msgs.forEach((i, n) => {
      const r = R[i], y = top + n * step, c2s = r[DIR] === "c2s", err = r[KIND] === "error" || r[FINDINGS].some((f) => f[1] === "error");
      // a request the tap refused itself stops halfway: it never reached the server
      const c = err ? "err" : r[DIR], x1 = c2s ? CX : SX, x2 = r[REFUSED] ? (CX + SX) / 2 : c2s ? SX - 2 : CX + 2;
      const line = sv("line", { x1, y1: y, x2, y2: y, class: "m-" + c + (r[KIND] === "response" || r[KIND] === "error" ? " resp" : ""), "marker-end": `url(#ah-${c})`, "data-seq": r[SEQ] });
      const qj = r[Q] == null ? null : bySeq.get(r[Q]), qm = r[QCTX] ? r[QCTX][0] : qj == null ? null : R[qj][METHOD_SHOWN];
      let label = `#${r[SEQ]} ${r[METHOD_SHOWN] || (qm ? qm + " ←" : r[KIND] || "")}`;
      if (r[TOOL_SHOWN]) label += " " + r[TOOL_SHOWN];
      if (r[LAT] != null) label += ` ${(r[LAT] / 1000).toFixed(1)}ms`;
      if (r[REFUSED]) label += ` ${r[REFUSED]}: refused`;
      const t = sv("text", { x: CX + 12, y: y - 5, class: "lbl m-" + c }, label.length > 70 ? label.slice(0, 69) + "…" : label);
      const g = sv("g", { style: "cursor:pointer" }); g.append(line, t); g.addEventListener("click", () => jumpTo(r[SEQ]));
      svg.append(g);
    });
    const wrap = $("seqwrap"); wrap.textContent = ""; wrap.append(svg);
    $("seqrange").textContent = msgs.length ? `messages #${R[msgs[0]][SEQ]} to #${R[msgs[msgs.length - 1]][SEQ]} (scroll the timeline to move)` : "no messages in view";
  }

  // ---- start (#filter=EXPR applies a filter, #seq=N opens message N; #…&dump lists the matches
  // and the open payload, for tests) ----
  const hash = new URLSearchParams(location.hash.slice(1));
  const initial = hash.get("filter");
  if (initial != null) { $("filter").value = initial; applyFilter(initial); } else applyFilter("");
  diagram(0);
  if (hash.has("seq")) jumpTo(Number(hash.get("seq")));
  if (hash.has("dump")) {
    const out = { shown: view.map((i) => R[i][SEQ]) };
    if (hash.has("filters")) {    // several expressions at once: {expr: [seq…] | {error}}
      out.filters = {};
      for (const expr of JSON.parse(hash.get("filters"))) {
        try { const p = compile(expr); out.filters[expr] = R.map((_, i) => i).filter((i) => p(i)).map((i) => R[i][SEQ]); }
        catch (e) { out.filters[expr] = { error: e.message, col: e.col }; }
      }
    }
    const pane = $("detail").querySelector("pre.payload");
    if (pane) out.payload = pane.textContent;
    const d = $("dump"); d.hidden = false; d.textContent = JSON.stringify(out);
  }
  document.body.dataset.script = String(Math.round(performance.now() - T0));   // data parsed, timeline rendered
  document.body.dataset.ready = String(Math.round(performance.now()));         // the same, since navigation start
  document.body.dataset.shown = String(view.length);
})();
