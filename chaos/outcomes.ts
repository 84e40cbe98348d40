/**
 * The results side of a chaos run: a follower of the results topic, and the comparison of
 * every command's results with the outcome the workload decided for each of its sends.
 */
import type { Kafka } from 'kafkajs';
import { composeOperator, type PartitionOffsets, type TopicLog } from '../functions/compose/operator.ts';
import type { ResultRecord } from '../functions/core/wire.ts';
import { matches, type Expected, type PlannedCommand } from './workload.ts';

/** A result that is not what the workload decided, or a command without any result. */
export interface OutcomeMismatch {
  readonly commandId: string;
  readonly aggregateId: string;
  readonly expected: readonly Expected[];
  readonly actual: readonly ResultRecord[];
}

/** Follows the results topic from the start, by polling reads up to its end offsets. */
export class ResultsFollower {
  readonly byCommand = new Map<string, ResultRecord[]>();
  private readonly log: TopicLog;
  private from: PartitionOffsets = {};

  constructor(kafka: Kafka, topic: string) {
    this.log = composeOperator('chaos', { kafka }).log(topic);
  }

  /** Reads what was added since the last poll. */
  async poll(): Promise<void> {
    const { end } = await this.log.offsets();
    await this.log.read(this.from, end, (records) => {
      for (const r of records) {
        const result = JSON.parse(r.value?.toString('utf8') ?? 'null') as ResultRecord | null;
        if (result?.commandId == null) continue;
        this.byCommand.set(result.commandId, [...(this.byCommand.get(result.commandId) ?? []), result]);
      }
      return Promise.resolve('continue' as const);
    });
    this.from = end;
  }

  /** How many of the commands have no result yet (a `parked` one is none). */
  missing(planned: readonly PlannedCommand[]): number {
    const answered = (id: string) => (this.byCommand.get(id) ?? []).some((r) => r.status !== 'parked');
    return new Set(planned.map((p) => p.command.commandId).filter((id) => !answered(id))).size;
  }

  close(): Promise<void> {
    return this.log.close();
  }
}

/** What the results say against the plan. */
export interface OutcomeComparison {
  readonly mismatches: readonly OutcomeMismatch[];
  /** Commands with no result at all. */
  readonly missingResults: number;
  readonly accepted: number;
  readonly rejected: number;
  /** Rejections by code, of each send's first result. */
  readonly rejections: Readonly<Record<string, number>>;
}

/** Every result of a command is one the workload decided for one of its sends, and every send has one. */
export const compareOutcomes = (
  planned: readonly PlannedCommand[],
  results: ReadonlyMap<string, readonly ResultRecord[]>,
): OutcomeComparison => {
  const expectedBy = new Map<string, { aggregateId: string; expected: Expected[] }>();
  for (const p of planned) {
    const entry = expectedBy.get(p.command.commandId) ?? { aggregateId: p.command.aggregateId, expected: [] };
    entry.expected.push(p.expected);
    expectedBy.set(p.command.commandId, entry);
  }
  const mismatches: OutcomeMismatch[] = [];
  let missingResults = 0;
  for (const [commandId, { aggregateId, expected }] of expectedBy) {
    // A `parked` result is no outcome: the final one follows the release or the discard.
    const actual = (results.get(commandId) ?? []).filter((r) => r.status !== 'parked');
    if (actual.length === 0) missingResults++;
    const fine = actual.every((r) => expected.some((e) => matches(e, r))) && expected.every((e) => actual.some((r) => matches(e, r)));
    if (!fine) mismatches.push({ commandId, aggregateId, expected, actual });
  }
  const firsts = planned.map((p) => results.get(p.command.commandId)?.[0]);
  const rejections: Record<string, number> = {};
  for (const r of firsts) if (r?.status === 'rejected') rejections[r.reason.code] = (rejections[r.reason.code] ?? 0) + 1;
  return {
    mismatches,
    missingResults,
    accepted: firsts.filter((r) => r?.status === 'accepted').length,
    rejected: firsts.filter((r) => r?.status === 'rejected').length,
    rejections,
  };
};
