// A small YAML emitter for JSON values (what the admin API answers):
// block maps and lists, two-space indentation, keys sorted for a stable
// order, and every string that a YAML reader could take for something
// else double-quoted (JSON's string escapes are valid YAML).
//
// The rule for strings is deliberately conservative: a string is written
// plain only when it is made of characters that carry no meaning in YAML
// and cannot be read as a boolean, null or number under YAML 1.1 or 1.2.
// Everything else is quoted — a quoted string is always correct, a plain
// one only when the reader agrees.

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue }

export interface EmitOptions {
  // sortKeys orders every map's keys (default true); false keeps the
  // object's own order.
  sortKeys?: boolean
}

// Words YAML 1.1 or 1.2 reads as a boolean or null (compared lower-cased).
const reservedWords = new Set(['true', 'false', 'yes', 'no', 'on', 'off', 'y', 'n', 'null', '~'])

// Characters a plain scalar may hold anywhere: letters and digits of
// any script, and punctuation that YAML gives no meaning in a block.
const plainChars = /^[\p{L}\p{N}_.\/+\-() $;^@]+$/u

// needsQuotes reports whether a string must be double-quoted to read
// back as the same string.
export function needsQuotes(s: string): boolean {
  if (s === '') return true
  if (!plainChars.test(s)) return true // ":", "#", quotes, brackets, control characters, tabs, newlines
  if (s !== s.trim()) return true // leading or trailing space
  if (reservedWords.has(s.toLowerCase())) return true
  // Starts that mean something else: "-" (a list item, "---"), "." ("...",
  // ".5", ".inf"), "+" ("+1"), "@" (reserved), and a digit ("1e3", "0x1f",
  // "2026-01-01", "1_000": numbers or timestamps to some reader).
  if (/^[-+.@\p{N}]/u.test(s)) return true
  return false
}

// quote writes a double-quoted YAML scalar. JSON.stringify escapes the
// quote, the backslash and every C0 control; the few characters YAML
// treats as breaks or non-printable that JSON leaves alone (DEL, the C1
// controls, U+2028/U+2029, a byte-order mark) are escaped as well.
export function quote(s: string): string {
  return JSON.stringify(s).replace(/[\u007f-\u009f\u2028\u2029\ufeff]/g, (c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'))
}

// scalar writes a string, number, boolean or null.
export function scalar(v: null | boolean | number | string): string {
  if (v === null) return 'null'
  if (typeof v === 'boolean') return v ? 'true' : 'false'
  if (typeof v === 'number') {
    if (Number.isNaN(v)) return '.nan'
    if (!Number.isFinite(v)) return v > 0 ? '.inf' : '-.inf'
    return Object.is(v, -0) ? '0' : String(v)
  }
  return needsQuotes(v) ? quote(v) : v
}

function isMap(v: JsonValue): v is { [key: string]: JsonValue } {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

// isBlock: a non-empty map or list (written on the lines below its key or
// dash); everything else fits on the same line.
function isBlock(v: JsonValue): boolean {
  return Array.isArray(v) ? v.length > 0 : isMap(v) && Object.keys(v).length > 0
}

function inline(v: JsonValue): string {
  if (Array.isArray(v)) return '[]'
  if (isMap(v)) return '{}'
  return scalar(v)
}

function keysOf(m: { [key: string]: JsonValue }, opts: Required<EmitOptions>): string[] {
  const keys = Object.keys(m).filter((k) => m[k] !== undefined)
  return opts.sortKeys ? keys.sort() : keys
}

// lines writes a block map or list at the given indentation.
function lines(v: JsonValue, indent: string, opts: Required<EmitOptions>): string[] {
  const out: string[] = []
  if (Array.isArray(v)) {
    for (const item of v) {
      if (!isBlock(item)) {
        out.push(indent + '- ' + inline(item))
        continue
      }
      // The item's first line shares the dash; the rest align under it.
      const inner = lines(item, indent + '  ', opts)
      out.push(indent + '- ' + inner[0].slice(indent.length + 2), ...inner.slice(1))
    }
    return out
  }
  const m = v as { [key: string]: JsonValue }
  for (const k of keysOf(m, opts)) {
    const key = scalar(k)
    const child = m[k]
    if (isBlock(child)) out.push(indent + key + ':', ...lines(child, indent + '  ', opts))
    else out.push(indent + key + ': ' + inline(child))
  }
  return out
}

// emitYaml writes a JSON value as a YAML document (no "---"), ending in
// a newline.
export function emitYaml(v: JsonValue, options: EmitOptions = {}): string {
  const opts: Required<EmitOptions> = { sortKeys: options.sortKeys ?? true }
  if (!isBlock(v)) return inline(v) + '\n'
  return lines(v, '', opts).join('\n') + '\n'
}
