/**
 * Holding command processing on AWS: disables and re-enables the commands topic's event
 * source mapping. The rebuild's lock in the control item guards commits regardless; this
 * stops the trigger from burning its retries on batches that would be refused.
 */
import { sleep } from '../../core/async.ts';
import { GetEventSourceMappingCommand, UpdateEventSourceMappingCommand, type LambdaClient } from '@aws-sdk/client-lambda';
import type { CommandGate } from '../../rebuild/ports.ts';
import { KafkaAggregatesError } from '../../core/errors.ts';

/** The mapping did not reach the wanted state in time. */
export class TriggerGateTimeoutError extends KafkaAggregatesError {
  static override readonly disposition = 'retry-batch';
  override readonly name = 'TriggerGateTimeoutError';
  constructor(
    readonly uuid: string,
    readonly wanted: string,
    readonly last: string | undefined,
  ) {
    super(`event source mapping ${uuid} did not become ${wanted} in time (last state: ${last ?? 'unknown'})`);
  }
}

/** Pauses and resumes one event source mapping. */
export class EventSourceMappingGate implements CommandGate {
  constructor(
    private readonly lambda: LambdaClient,
    private readonly uuid: string,
    private readonly timeoutMs = 180_000,
  ) {}

  async pause(): Promise<void> {
    await this.lambda.send(new UpdateEventSourceMappingCommand({ UUID: this.uuid, Enabled: false }));
    await this.waitFor('Disabled');
  }

  async resume(): Promise<void> {
    await this.lambda.send(new UpdateEventSourceMappingCommand({ UUID: this.uuid, Enabled: true }));
  }

  private async waitFor(state: string): Promise<void> {
    const until = Date.now() + this.timeoutMs;
    let last: string | undefined;
    while (Date.now() < until) {
      last = (await this.lambda.send(new GetEventSourceMappingCommand({ UUID: this.uuid }))).State;
      if (last === state) return;
      await sleep(2_000);
    }
    throw new TriggerGateTimeoutError(this.uuid, state, last);
  }
}

/** For environments without a controllable trigger: the control item's lock alone holds commands. */
export const lockOnlyGate: CommandGate = { pause: () => Promise.resolve(), resume: () => Promise.resolve() };
