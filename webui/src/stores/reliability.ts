import { defineStore } from 'pinia'
import { computed, ref } from 'vue'
import { apiGet, ApiError } from '../lib/api'
import { busiest, clampSpan, reliabilityRows, type OverviewProvider, type PerfAnswer, type PerfWindow } from '../lib/perf'
import { asApiError } from '../lib/read-error'
import { useAuthStore } from './auth'
import { useDashboardStore } from './dashboard'

// The Reliability page's reads: every provider's performance over the
// chosen window and span, and one provider's series for the chart.

export const refreshEveryMs = 30_000

export const useReliabilityStore = defineStore('reliability', () => {
  const dash = useDashboardStore()
  const timeWindow = ref<PerfWindow>('hour')
  const span = ref(24)
  // threshold: a failure rate above it is highlighted (a ratio).
  const threshold = ref(0.05)
  const answer = ref<PerfAnswer | null>(null)
  const error = ref<ApiError | null>(null)
  // selected: the provider the chart shows ("" before the first read).
  const selected = ref('')
  const series = ref<PerfAnswer | null>(null)
  const seriesError = ref<ApiError | null>(null)
  // A newer read supersedes an older one still in flight.
  let readSeq = 0
  let seriesSeq = 0

  function failed(e: unknown): ApiError {
    const err = asApiError(e)
    if (err.unauthorized) useAuthStore().reject()
    return err
  }

  function setWindow(w: PerfWindow, s: number = span.value) {
    timeWindow.value = w
    span.value = clampSpan(w, s)
  }

  async function load() {
    const mine = ++readSeq
    try {
      const a = await apiGet<PerfAnswer>('performance', { kind: 'provider', window: timeWindow.value, span: span.value })
      if (mine !== readSeq) return
      answer.value = a
      error.value = null
      if (!a.rows.some((r) => r.id === selected.value)) selected.value = busiest(a.rows)
    } catch (e) {
      if (mine !== readSeq) return
      answer.value = null
      error.value = failed(e)
    }
    await loadSeries()
  }

  async function loadSeries() {
    const mine = ++seriesSeq
    if (!selected.value) {
      series.value = null
      return
    }
    try {
      const params = { kind: 'provider', window: timeWindow.value, span: span.value, id: selected.value, series: 1 }
      const s = await apiGet<PerfAnswer>('performance', params)
      if (mine !== seriesSeq) return
      series.value = s
      seriesError.value = null
    } catch (e) {
      if (mine !== seriesSeq) return
      series.value = null
      seriesError.value = failed(e)
    }
  }

  function select(id: string) {
    selected.value = id
    return loadSeries()
  }

  const providers = computed<OverviewProvider[] | null>(() => dash.overview?.providers ?? null)
  const rows = computed(() => reliabilityRows(answer.value, providers.value, threshold.value))

  return { timeWindow, span, threshold, answer, error, selected, series, seriesError, rows, setWindow, load, loadSeries, select }
})
