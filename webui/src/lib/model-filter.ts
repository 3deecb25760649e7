// The Models page's search box and provider filter, applied client-side
// to the already-joined rows (the reads stay unfiltered).

export interface ModelFilter {
  // q: words that must all appear (case-insensitive) in the id or an alias.
  q: string
  // provider: one provider's rows only; "" for every provider.
  provider: string
}

interface Filterable {
  id: string
  provider: string
  aliases: string[]
}

// terms splits a query into lower-case words.
export function terms(q: string): string[] {
  return q.toLowerCase().split(/\s+/).filter(Boolean)
}

// matches says one row passes the filter.
export function matches(row: Filterable, f: ModelFilter): boolean {
  if (f.provider && row.provider !== f.provider) return false
  const words = terms(f.q)
  if (words.length === 0) return true
  const hay = [row.id, ...row.aliases].map((s) => s.toLowerCase())
  return words.every((w) => hay.some((h) => h.includes(w)))
}

// filterModels keeps the rows that pass, in their order.
export function filterModels<T extends Filterable>(rows: T[], f: ModelFilter): T[] {
  if (!f.provider && terms(f.q).length === 0) return rows
  return rows.filter((r) => matches(r, f))
}

// providersOf lists the rows' providers, sorted, each once (the filter's
// choices).
export function providersOf(rows: Filterable[]): string[] {
  return [...new Set(rows.map((r) => r.provider))].filter(Boolean).sort()
}
