import { describe, expect, it } from 'vitest'
import { emitYaml, needsQuotes, quote, scalar } from './yaml-emit'
import configAnswer from '../fixtures/config-config.json'

describe('yaml-emit scalars', () => {
  it('writes plain strings plain', () => {
    for (const s of ['openai', 'gpt-4o', 'chat/completions', 'a b c', 'TMPDIR/users.json', 'claude-haiku-4-5', 'Ünïcödé', 'under_score', 'x.y', 'm1']) {
      expect(needsQuotes(s), s).toBe(false)
      expect(scalar(s)).toBe(s)
    }
  })
  it('quotes strings with ":" or "#" anywhere', () => {
    expect(scalar('env:LLMGW_KEY')).toBe('"env:LLMGW_KEY"')
    expect(scalar('http://127.0.0.1:9/v1')).toBe('"http://127.0.0.1:9/v1"')
    expect(scalar('a: b')).toBe('"a: b"')
    expect(scalar('trailing:')).toBe('"trailing:"')
    expect(scalar('a #comment')).toBe('"a #comment"')
    expect(scalar('#x')).toBe('"#x"')
  })
  it('quotes indicators, brackets and quote characters', () => {
    for (const s of ['-', '- x', '-1', '---', '...', '.hidden', '?', '? x', '[a]', '{a}', 'a,b', '&anchor', '*alias', '!tag', '|', '>', "'q'", '"q"', '%YAML', '@x', '`x`', '<<', '=', 'a=b', '~', 'docs-*']) {
      expect(needsQuotes(s), s).toBe(true)
    }
    expect(scalar('docs-*')).toBe('"docs-*"')
    expect(scalar('[redacted]')).toBe('"[redacted]"')
  })
  it('quotes booleans and nulls of YAML 1.1 and 1.2 in any case', () => {
    for (const s of ['true', 'False', 'TRUE', 'yes', 'No', 'on', 'OFF', 'y', 'N', 'null', 'Null', 'NULL', '~']) {
      expect(scalar(s)).toBe(JSON.stringify(s))
    }
    expect(scalar('nullable')).toBe('nullable')
    expect(scalar('yesterday')).toBe('yesterday')
  })
  it('quotes number-like and date-like strings', () => {
    for (const s of ['0', '12', '1.5', '.5', '+1', '-2', '1e3', '0x1f', '0o17', '1_000', '2026-01-01', '5m', '0s', '250ms']) {
      expect(scalar(s), s).toBe(JSON.stringify(s))
    }
  })
  it('quotes empty, space-padded and multi-line strings, escaping as JSON', () => {
    expect(scalar('')).toBe('""')
    expect(scalar(' lead')).toBe('" lead"')
    expect(scalar('trail ')).toBe('"trail "')
    expect(scalar('two\nlines')).toBe('"two\\nlines"')
    expect(scalar('tab\there')).toBe('"tab\\there"')
    expect(scalar('say "hi" \\ bye')).toBe('"say \\"hi\\" \\\\ bye"')
    expect(scalar('model "m1" is served')).toBe('"model \\"m1\\" is served"')
  })
  it('escapes the characters YAML reads as breaks or non-printable', () => {
    expect(quote('a\u2028b')).toBe('"a\\u2028b"')
    expect(quote('a\u0085b')).toBe('"a\\u0085b"')
    expect(quote('\u007f')).toBe('"\\u007f"')
    expect(quote('\ufeffx')).toBe('"\\ufeffx"')
    expect(quote('\u0001')).toBe('"\\u0001"')
  })
  it('writes numbers, booleans and null', () => {
    expect(scalar(0)).toBe('0')
    expect(scalar(-0)).toBe('0')
    expect(scalar(1.5)).toBe('1.5')
    expect(scalar(-3)).toBe('-3')
    expect(scalar(1500000)).toBe('1500000')
    expect(scalar(true)).toBe('true')
    expect(scalar(false)).toBe('false')
    expect(scalar(null)).toBe('null')
    expect(scalar(Infinity)).toBe('.inf')
    expect(scalar(-Infinity)).toBe('-.inf')
    expect(scalar(NaN)).toBe('.nan')
  })
})

describe('yaml-emit documents', () => {
  it('writes a top-level scalar or empty value on one line', () => {
    expect(emitYaml('x')).toBe('x\n')
    expect(emitYaml(7)).toBe('7\n')
    expect(emitYaml(null)).toBe('null\n')
    expect(emitYaml({})).toBe('{}\n')
    expect(emitYaml([])).toBe('[]\n')
  })
  it('nests maps by two spaces with sorted keys', () => {
    expect(emitYaml({ b: 1, a: { d: true, c: 'x' } })).toBe('a:\n  c: x\n  d: true\nb: 1\n')
  })
  it('keeps the object order when asked', () => {
    expect(emitYaml({ b: 1, a: 2 }, { sortKeys: false })).toBe('b: 1\na: 2\n')
  })
  it('writes empty maps and lists inline', () => {
    expect(emitYaml({ a: {}, b: [], c: null })).toBe('a: {}\nb: []\nc: null\n')
  })
  it('writes lists of scalars under their key', () => {
    expect(emitYaml({ models: ['m1', 'p/m2', 'true', 3] })).toBe('models:\n  - m1\n  - p/m2\n  - "true"\n  - 3\n')
  })
  it('writes a map in a list on the dash line, the rest aligned', () => {
    expect(emitYaml({ inline: [{ name: 'alice', limits: { requestsPerDay: 5 } }, { name: 'bob' }] }, { sortKeys: false })).toBe(
      'inline:\n  - name: alice\n    limits:\n      requestsPerDay: 5\n  - name: bob\n',
    )
  })
  it('writes lists of lists and empty items', () => {
    expect(emitYaml([['a', 'b'], [], {}, [['c']]])).toBe('- - a\n  - b\n- []\n- {}\n- - - c\n')
  })
  it('quotes keys that need it', () => {
    expect(emitYaml({ 'p/m1': 1, 'a:b': 2, '': 3, true: 4, '10': 5 })).toBe('"": 3\n"10": 5\n"a:b": 2\np/m1: 1\n"true": 4\n')
  })
  it('skips undefined members', () => {
    expect(emitYaml({ a: 1, b: undefined } as never)).toBe('a: 1\n')
  })
  it('renders the redacted config golden', () => {
    const y = emitYaml(configAnswer.config as never)
    expect(y).toContain('admin:\n  enabled: true\n  stats: null\n')
    expect(y).toContain('providers:\n  envp:\n    apiKey: "env:LLMGW_ADMIN_CONFIG_TEST_KEY"\n    baseUrl: "http://127.0.0.1:9"\n')
    expect(y).toContain('  lit:\n    apiKey: "[redacted]"\n')
    expect(y).toContain('    models:\n      - c1\n')
    expect(y).toContain('cache:\n  enabled: true\n  maxBodyBytes: 0\n  ttl: "0s"\n')
    expect(y).toContain('users:\n  file: TMPDIR/users.json\n  inline:\n    - admin: true\n      apiKey: "[redacted]"\n      group: all\n')
    expect(y).toContain('    - admin: false\n      apiKey: "file:TMPDIR/dave.key"\n')
    expect(y).toContain('firstByteDeadline: ""\n')
    // Sorted: every top-level key in order.
    const top = y.split('\n').filter((l) => /^[^ -]/.test(l)).map((l) => l.split(':')[0])
    expect(top).toEqual([...top].sort())
    expect(y.endsWith('\n')).toBe(true)
  })
})
