// The only place that fetches. Every call sends the admin key from the
// auth store as x-api-key and answers the parsed JSON, or throws an
// ApiError carrying the HTTP status and the gateway's error code.

export class ApiError extends Error {
  constructor(
    public status: number,
    public code: string,
    message: string,
  ) {
    super(message)
    this.name = 'ApiError'
  }

  // unauthorized: the key is missing, wrong or not an admin's (the key
  // form is shown again).
  get unauthorized(): boolean {
    return this.status === 401 || this.status === 403
  }

  // storeDown: the counter store is unreachable (never draw it as zero).
  get storeDown(): boolean {
    return this.status === 503
  }
}

export type Params = Record<string, string | number | boolean | Array<string | number> | undefined>

// query encodes params; an array repeats its key; undefined is left out.
export function query(params?: Params): string {
  if (!params) return ''
  const q = new URLSearchParams()
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined) continue
    if (Array.isArray(v)) v.forEach((x) => q.append(k, String(x)))
    else q.append(k, String(v))
  }
  const s = q.toString()
  return s ? '?' + s : ''
}

let currentKey = ''

// setKey is called by the auth store only.
export function setKey(key: string): void {
  currentKey = key
}

// apiGet is GET /admin/api/{route}{?params}.
export async function apiGet<T>(route: string, params?: Params, fetcher: typeof fetch = fetch): Promise<T> {
  const resp = await fetcher('/admin/api/' + route + query(params), {
    headers: currentKey ? { 'x-api-key': currentKey } : {},
    cache: 'no-store',
  })
  const text = await resp.text()
  let body: unknown
  try {
    body = text ? JSON.parse(text) : undefined
  } catch {
    throw new ApiError(resp.status, 'bad_json', `the gateway answered ${resp.status} with a body that is not JSON`)
  }
  if (!resp.ok) {
    const err = (body as { error?: { code?: string; message?: string } } | undefined)?.error
    throw new ApiError(resp.status, err?.code ?? 'http_' + resp.status, err?.message ?? `HTTP ${resp.status}`)
  }
  return body as T
}
