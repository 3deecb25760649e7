// How each Spend metric is named and formatted.
import { count, micros } from '../../lib/format'
import type { SpendMetric } from '../../stores/spend'

export const metricLabel: Record<SpendMetric, string> = { cost: 'Cost', tokin: 'Tokens in', tokout: 'Tokens out' }

export function formatMetric(m: SpendMetric | string, v: number | null | undefined): string {
  return m === 'cost' ? micros(v) : count(v)
}
