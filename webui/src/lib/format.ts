// Number, money and time formatting shared by every page.

// micros formats micro-USD as dollars ("$1.23", "$0.0004").
export function micros(v: number | null | undefined): string {
  if (v === null || v === undefined) return '—'
  const usd = v / 1e6
  if (usd === 0) return '$0'
  if (Math.abs(usd) < 0.01) return '$' + usd.toPrecision(2)
  return '$' + usd.toFixed(2)
}

// count formats an integer with thousands separators; compact above a
// million ("1.2M").
export function count(v: number | null | undefined): string {
  if (v === null || v === undefined) return '—'
  if (Math.abs(v) >= 1e6) return (v / 1e6).toFixed(1).replace(/\.0$/, '') + 'M'
  return v.toLocaleString('en-US')
}

// percent formats a ratio (0.256 → "25.6%").
export function percent(ratio: number | null | undefined): string {
  if (ratio === null || ratio === undefined || !isFinite(ratio)) return '—'
  return (ratio * 100).toFixed(1).replace(/\.0$/, '') + '%'
}

// ms formats milliseconds ("850 ms", "2.5 s").
export function ms(v: number | null | undefined): string {
  if (v === null || v === undefined) return '—'
  return v < 1000 ? Math.round(v) + ' ms' : (v / 1000).toFixed(1).replace(/\.0$/, '') + ' s'
}

// ago formats a unix-seconds or ISO time relative to now ("3 min ago").
export function ago(t: number | string | null | undefined, now: number = Date.now()): string {
  if (t === null || t === undefined || t === 0 || t === '' || t === '0001-01-01T00:00:00Z') return 'never'
  const at = typeof t === 'number' ? t * 1000 : Date.parse(t)
  const s = Math.max(0, Math.round((now - at) / 1000))
  if (s < 60) return s + ' s ago'
  if (s < 3600) return Math.round(s / 60) + ' min ago'
  if (s < 86400) return Math.round(s / 3600) + ' h ago'
  return Math.round(s / 86400) + ' d ago'
}
