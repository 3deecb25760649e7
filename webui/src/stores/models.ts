import { defineStore } from 'pinia'
import { computed, ref } from 'vue'
import { apiGet, ApiError } from '../lib/api'
import { joinModels, type Catalog, type UsageModelsAnswer } from '../lib/model-join'
import type { OverviewProvider, PerfAnswer } from '../lib/perf'
import { asApiError } from '../lib/read-error'
import { useAuthStore } from './auth'
import { useDashboardStore } from './dashboard'

// The Models page's reads: the catalog (on demand, at most one read per
// catalogMaxAgeMs), today's usage per model and, with latency stats on,
// today's latency per model. The joined rows read overview (success
// rates) from the dashboard's poll.

export const catalogMaxAgeMs = 5 * 60 * 1000
// usageLimit: the most models usage/models ranks in one answer.
export const usageLimit = 100
// refreshEveryMs: how often the open page re-reads usage and latency.
export const refreshEveryMs = 30_000

export const useModelsStore = defineStore('models', () => {
  const dash = useDashboardStore()
  const catalog = ref<Catalog | null>(null)
  const catalogAt = ref(0)
  const catalogError = ref<ApiError | null>(null)
  const usage = ref<UsageModelsAnswer | null>(null)
  const usageError = ref<ApiError | null>(null)
  const perf = ref<PerfAnswer | null>(null)
  const perfError = ref<ApiError | null>(null)

  // latencyOn: overview says the latency statistics are collected.
  const latencyOn = computed(() => dash.overview?.features?.latencyStats === true)
  const cacheOn = computed(() => dash.overview?.features?.cacheStats === true)
  const providers = computed<OverviewProvider[] | null>(() => dash.overview?.providers ?? null)

  function failed(e: unknown): ApiError {
    const err = asApiError(e)
    if (err.unauthorized) useAuthStore().reject()
    return err
  }

  async function loadCatalog(now: number = Date.now()) {
    if (catalog.value && now - catalogAt.value < catalogMaxAgeMs) return
    try {
      catalog.value = await apiGet<Catalog>('catalog')
      catalogAt.value = now
      catalogError.value = null
    } catch (e) {
      catalogError.value = failed(e)
    }
  }

  async function loadUsage() {
    try {
      usage.value = await apiGet<UsageModelsAnswer>('usage/models', { metric: 'req', window: 'day', detail: 1, limit: usageLimit })
      usageError.value = null
    } catch (e) {
      usage.value = null
      usageError.value = failed(e)
    }
  }

  async function loadPerf() {
    if (!latencyOn.value) {
      perf.value = null
      perfError.value = null
      return
    }
    try {
      perf.value = await apiGet<PerfAnswer>('performance', { kind: 'model', window: 'day' })
      perfError.value = null
    } catch (e) {
      perf.value = null
      perfError.value = failed(e)
    }
  }

  async function refresh(now: number = Date.now()) {
    await Promise.all([loadCatalog(now), loadUsage(), loadPerf()])
  }

  const rows = computed(() =>
    joinModels({ catalog: catalog.value, usage: usage.value, usageLimit, perf: perf.value, providers: providers.value }),
  )

  return { catalog, catalogAt, catalogError, usage, usageError, perf, perfError, latencyOn, cacheOn, providers, rows, loadCatalog, loadUsage, loadPerf, refresh }
})
