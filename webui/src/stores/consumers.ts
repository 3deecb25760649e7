import { defineStore } from 'pinia'
import { computed, ref } from 'vue'
import { apiGet, ApiError } from '../lib/api'
import type { Limits, UsageRow } from '../lib/limit-usage'
import { asApiError } from '../lib/series'
import { useAuthStore } from './auth'
import { useDashboardStore } from './dashboard'

// The Consumers page's data: GET consumers (read on demand: it is
// configuration, it changes only with a restart) joined with the
// dashboard store's polled usage rows, narrowed by a text filter.

export interface ConsumerUser {
  name: string
  group: string
  groups: string[]
  source: 'inline' | 'file'
  providers?: string[]
  models?: string[]
  admin: boolean
}

export interface ModelAccess {
  allowed: number
  total: number
}

export interface ConsumerGroup {
  name: string
  members: number
  providers?: string[]
  models?: string[]
  mcpServers?: string[]
  agents?: string[]
  passthroughPaths?: string[]
  allowedProviders: string[]
  modelAccess: Record<string, ModelAccess>
}

export interface ConsumersAnswer {
  users: ConsumerUser[]
  groups: ConsumerGroup[]
  usersFile?: string
}

// A row joined with its usage: usage is null when the usage read failed
// (or has no row for it); limits is undefined when they are unknown
// (a user's limits come only with the usage read), null when none.
export interface Joined<T> {
  item: T
  usage: UsageRow | null
  limits: Limits | null | undefined
}

// matches: every word of the filter occurs in one of the fields.
export function matches(filter: string, fields: Array<string | string[] | undefined>): boolean {
  const words = filter.toLowerCase().split(/\s+/).filter(Boolean)
  if (!words.length) return true
  const text = fields.flat().filter(Boolean).join(' ').toLowerCase()
  return words.every((w) => text.includes(w))
}

// matrixProviders is every provider any group's modelAccess counts,
// sorted: the access matrix's columns.
export function matrixProviders(groups: ConsumerGroup[]): string[] {
  const names = new Set<string>()
  groups.forEach((g) => Object.keys(g.modelAccess ?? {}).forEach((p) => names.add(p)))
  return [...names].sort()
}

export const useConsumersStore = defineStore('consumers', () => {
  const dash = useDashboardStore()
  const answer = ref<ConsumersAnswer | null>(null)
  const error = ref<ApiError | null>(null)
  const loading = ref(false)
  const filter = ref('')

  async function load() {
    loading.value = true
    try {
      answer.value = await apiGet<ConsumersAnswer>('consumers')
      error.value = null
    } catch (e) {
      const err = asApiError(e)
      if (err.unauthorized) useAuthStore().reject()
      error.value = err
    } finally {
      loading.value = false
    }
  }

  // usageState: the last usage poll succeeded ("ok"; a stale answer from
  // before a failure is not shown as current), failed, or none came yet.
  const usageState = computed<'ok' | 'failed' | 'loading'>(() =>
    dash.error !== null ? 'failed' : dash.usage !== null ? 'ok' : 'loading',
  )
  const usageAvailable = computed(() => usageState.value === 'ok')

  function usageRow(kind: 'users' | 'groups', name: string): UsageRow | null {
    if (!usageAvailable.value) return null
    return (dash.usage?.[kind] as UsageRow[] | undefined)?.find((r) => r.name === name) ?? null
  }

  // groupLimits falls back to the overview's groups (read even when the
  // counter store is down) so a group's limits show without its usage.
  function groupLimits(name: string, row: UsageRow | null): Limits | null | undefined {
    if (row) return row.limits
    const g = (dash.overview?.groups as Array<{ name: string; limits: Limits | null }> | undefined)?.find((x) => x.name === name)
    return g ? g.limits : undefined
  }

  const users = computed<Joined<ConsumerUser>[]>(() =>
    (answer.value?.users ?? [])
      .filter((u) => matches(filter.value, [u.name, u.groups, u.source, u.providers, u.models, u.admin ? 'admin' : undefined]))
      .map((u) => {
        const usage = usageRow('users', u.name)
        return { item: u, usage, limits: usage ? usage.limits : undefined }
      }),
  )

  const groups = computed<Joined<ConsumerGroup>[]>(() =>
    (answer.value?.groups ?? [])
      .filter((g) =>
        matches(filter.value, [g.name, g.providers, g.models, g.mcpServers, g.agents, g.passthroughPaths, g.allowedProviders]),
      )
      .map((g) => {
        const usage = usageRow('groups', g.name)
        return { item: g, usage, limits: groupLimits(g.name, usage) }
      }),
  )

  const providers = computed(() => matrixProviders(answer.value?.groups ?? []))

  return { answer, error, loading, filter, usageState, usageAvailable, users, groups, providers, load }
})
