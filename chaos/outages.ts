/**
 * The chaos run's outages: the broker stopped and started, the runtime's connections to
 * DynamoDB cut, the broker stopped for as long as an outage lasts. Each lasts until some batch
 * has failed more than the old retry budget, then says how long each handler stayed blocked.
 */
import { sleep } from '../functions/core/async.ts';
import type { FaultKind } from './faults.ts';
import { restartBroker } from './restarts.ts';
import { blockedDuring, OLD_RETRY_BUDGET, seconds, waitFor, type RunState } from './run-state.ts';

/** The outages a run brings on, and when each began and ended. */
export class Outages {
  /** Outages by kind: when each began and ended, for the summary. */
  readonly outages: { kind: FaultKind; from: number; to: number }[] = [];

  constructor(protected readonly run: RunState) {}

  /** Waits until no partition of the runtime is blocked (after an outage ends). */
  protected async goneOn(timeoutMs = 180_000): Promise<boolean> {
    return waitFor(
      async () =>
        (
          await this.run
            .runtime()
            .blocked()
            .catch(() => [1])
        ).length === 0,
      timeoutMs,
      500,
    );
  }

  /** Stops and starts the broker (this project's stack's only). */
  async brokerRestart(): Promise<void> {
    const outcome = await restartBroker(this.run.say);
    if (!outcome.restarted) return this.run.skip(`broker restart skipped: ${outcome.why}`);
    this.run.count('broker-restart');
    this.run.note(`broker-restart: down and up again in ${seconds(outcome.ms)}`);
  }

  /** Cuts the runtime's connections to DynamoDB for the outage's length; the data stays. */
  async dynamodbOutage(): Promise<void> {
    const { say, proxy } = this.run;
    say(
      `dynamodb outage: cutting the runtime's connections to DynamoDB for ${seconds(this.run.outageMs)} at least, until a batch has failed more than ten times`,
    );
    const from = Date.now();
    await proxy.cut();
    this.run.count('dynamodb-outage');
    const pastBudget = await this.lasts(from);
    await proxy.restore();
    const to = Date.now();
    this.outages.push({ kind: 'dynamodb-outage', from, to });
    const wentOn = await this.goneOn();
    say(
      `dynamodb outage: connections restored after ${seconds(to - from)}; ${wentOn ? 'every partition went on' : 'partitions still blocked'}`,
    );
    this.run.note(
      `dynamodb-outage: connections cut for ${seconds(to - from)}${pastBudget ? '' : ' (NO batch failed more than ten times)'}; ${blockedDuring(this.run.reports, from, to)}; ${wentOn ? 'all went on' : 'STILL BLOCKED'}`,
    );
  }

  /** Stops the broker for the outage's length (and until a batch has failed more than ten times), then starts it with its data. */
  async kafkaOutage(): Promise<void> {
    const from = Date.now();
    let pastBudget = false;
    const outcome = await restartBroker(this.run.say, async () => void (pastBudget = await this.lasts(from)));
    if (!outcome.restarted) return this.run.skip(`kafka outage skipped: ${outcome.why}`);
    const to = Date.now();
    this.run.count('kafka-outage');
    this.outages.push({ kind: 'kafka-outage', from, to });
    const wentOn = await this.goneOn();
    this.run.note(
      `kafka-outage: broker down ${seconds(outcome.ms)} (data kept)${pastBudget ? '' : ' (NO batch failed more than ten times)'}; ${blockedDuring(this.run.reports, from, to)}; ${wentOn ? 'all went on' : 'STILL BLOCKED'}`,
    );
  }

  /**
   * An outage lasts the run's outage length, and on until some batch has failed more than ten
   * times (the old retry budget, after which the trigger used to skip it), for ten more minutes
   * at most. True when one did.
   */
  private async lasts(from: number): Promise<boolean> {
    await sleep(Math.max(0, from + this.run.outageMs - Date.now()));
    // The first attempt and OLD_RETRY_BUDGET retries failed: the one after is past the old budget.
    return waitFor(() => this.run.reports.some((r) => r.at >= from && r.report.attempt > OLD_RETRY_BUDGET + 1), 600_000, 500);
  }
}
