import { defineStore } from 'pinia'
import { ref } from 'vue'
import { apiGet, ApiError } from '../lib/api'
import { useAuthStore } from './auth'

// The one background poll behind every page: overview, usage and
// targets every 5 seconds while the app is open. A page reads them from
// here; it fetches its own on-demand data through lib/api.ts.

export const pollEveryMs = 5000

export const useDashboardStore = defineStore('dashboard', () => {
  const overview = ref<any>(null)
  const usage = ref<any>(null)
  const targets = ref<any>(null)
  // error is the last poll's failure (a 503: the store is unreachable —
  // a banner, never zeros); null when the last poll succeeded.
  const error = ref<ApiError | null>(null)
  const updated = ref<number>(0)
  let timer: ReturnType<typeof setInterval> | undefined

  async function poll() {
    const auth = useAuthStore()
    if (!auth.key) return
    try {
      const [o, u, t] = await Promise.all([
        apiGet('overview'),
        apiGet('usage').catch((e) => e),
        apiGet('targets').catch(() => null),
      ])
      overview.value = o
      if (u instanceof ApiError) {
        if (u.unauthorized) throw u
        error.value = u
      } else {
        usage.value = u
        error.value = null
      }
      targets.value = t
      updated.value = Date.now()
    } catch (e) {
      if (e instanceof ApiError && e.unauthorized) auth.reject()
      else error.value = e instanceof ApiError ? e : new ApiError(0, 'network', String(e))
    }
  }

  function start() {
    if (timer) return
    void poll()
    timer = setInterval(() => void poll(), pollEveryMs)
  }

  function stop() {
    if (timer) clearInterval(timer)
    timer = undefined
  }

  return { overview, usage, targets, error, updated, poll, start, stop }
})
