/**
 * The chaos run as the infrastructure and its operator: the faults it brings on from outside
 * the handlers (a broker restart, dependency outages, a recreated commands topic, a rebuild
 * from the CLI, a table restored from an older copy, the loss of the tables, a hard kill of
 * everything), and what an operator does about each (drain first, run the rebuild once the
 * command handler refuses to decide). Each says what happened in a note.
 */
import { DeleteTableCommand } from '@aws-sdk/client-dynamodb';
import { composeOperator, ensureTopics, type AggregatesTable, type Operator as Tables } from '../functions/compose/operator.ts';
import { eventFailurePolicy } from '../functions/config.ts';
import { aggregates } from '../functions/domain/index.ts';
import { projections } from '../functions/projections/index.ts';
import { reactions } from '../functions/reactions/index.ts';
import { rebuildAggregates, type RebuildReport } from '../functions/rebuild/rebuild-aggregates.ts';
import { rebuildReadModels } from '../functions/rebuild/rebuild-read-models.ts';
import { retentionMs, topics as topologyTopics } from '../functions/topology.ts';
import { provision } from '../local/provision.ts';
import { Outages } from './outages.ts';
import { brokerNotOurs, killBroker } from './restarts.ts';
import { COMMAND_HANDLER, EVENT_HANDLER } from './runtime-protocol.ts';
import { groupLag, seconds, waitFor } from './run-state.ts';
import { runRebuildCli, scanTable, writeItems } from './table-copy.ts';

/** The run as operator: the outages (chaos/outages.ts), and the faults that need an operator's hand. */
export class Operator extends Outages {
  private backup: { items: Record<string, unknown>[]; at: number; sent: number } | undefined;
  /** The run's tables and topics through the current DynamoDB client (renewed after an emulator restart). */
  private get tables(): Tables {
    return composeOperator('chaos-operator', { kafka: this.run.kafka, dynamo: this.run.dynamo() });
  }

  private get heads(): AggregatesTable {
    return this.tables.heads;
  }

  /**
   * Waits until every command sent has a result, both triggers have committed everything and
   * nothing is blocked. The event trigger first: its reactions send commands before it commits,
   * so once it has committed everything, the commands trigger's lag counts every command they sent.
   */
  private async drain(): Promise<boolean> {
    const { follower, planned, admin, commandsGroup, eventsGroup, topics } = this.run;
    return waitFor(
      async () => {
        await follower.poll().catch(() => undefined);
        if (follower.missing(planned) > 0) return false;
        const events = await groupLag(admin, eventsGroup, topics.events).catch(() => 1);
        const commands = events === 0 ? await groupLag(admin, commandsGroup, topics.commands).catch(() => 1) : 1;
        return commands === 0 && (await this.run.runtime().blocked()).length === 0;
      },
      this.run.drainTimeoutMs,
      500,
    );
  }

  /** Deletes the commands topic and creates it again, as an operator would: drained first, so no command is lost with it. */
  async recreateCommandsTopic(): Promise<void> {
    const { say, admin, topics } = this.run;
    say('topic recreation: draining the commands topic first (no new commands until every one sent has its result)');
    const since = Date.now();
    if (!(await this.drain())) throw new Error(`topic recreation: the run did not drain within ${seconds(this.run.drainTimeoutMs)}`);
    const drained = Date.now() - since;
    await admin.deleteTopics({ topics: [topics.commands], timeout: 30_000 });
    const gone = await waitFor(async () => !(await admin.listTopics()).includes(topics.commands), 30_000);
    if (!gone) throw new Error(`topic recreation: ${topics.commands} is still listed 30 s after its deletion`);
    const created = await waitFor(
      () =>
        ensureTopics(admin, [{ ...topologyTopics.commands, name: topics.commands }]).then(
          () => true,
          () => false,
        ),
      30_000,
      250,
    );
    if (!created) throw new Error(`topic recreation: ${topics.commands} could not be created again`);
    await this.run.sender.restart();
    this.run.count('topic-recreated');
    say(`topic recreation: ${topics.commands} deleted and created again; its offsets start at 0`);
    this.run.note(
      `topic-recreated: drained ${this.run.planned.length} commands in ${seconds(drained)}, then deleted and recreated ${topics.commands}; commands went on from offset 0`,
    );
  }

  /** Runs `kafka-aggregates rebuild` as a child process with the run's names, while commands keep arriving. */
  async cliRebuild(): Promise<void> {
    const { say, commandsGroup } = this.run;
    say('cli rebuild: kafka-aggregates rebuild, while commands keep arriving');
    const from = Date.now();
    // Commands wait in the trigger (as behind a backlog) until the rebuild holds its lock, so that batches meet it.
    await this.run.runtime().pause(COMMAND_HANDLER);
    const cli = runRebuildCli(commandsGroup);
    let done = false;
    void cli.finally(() => (done = true));
    await waitFor(async () => done || (await this.heads.getControl().catch(() => undefined))?.status === 'rebuilding', 120_000, 50);
    await this.run.runtime().resume(COMMAND_HANDLER);
    const { stdout, code, stderr } = await cli;
    if (code !== 0) throw new Error(`cli rebuild: kafka-aggregates rebuild exited with ${code}:\n${stderr.slice(-2000)}`);
    const report = JSON.parse(stdout) as RebuildReport;
    const to = Date.now();
    const held = this.run.reports.filter((r) => r.at >= from && r.report.error?.startsWith('RebuildInProgressError') === true).length;
    this.run.count('cli-rebuild');
    say(`cli rebuild: ${report.status} in ${seconds(to - from)}`);
    this.run.note(
      `cli-rebuild: kafka-aggregates rebuild ${report.status} in ${seconds(to - from)}: ${report.eventsRead} events, ${report.headsWritten} heads written, ` +
        `${report.fencedOff} fenced off (a newer head kept), ${report.outboxRepublished} outbox events published; the trigger held ${held} batch(es) on the lock meanwhile`,
    );
  }

  /** A point-in-time copy of the aggregates table (commands held for the scan, as a backup is consistent). */
  async backUpTable(): Promise<void> {
    const { runtime, tables } = this.run;
    await runtime().pause(COMMAND_HANDLER);
    try {
      const items = await scanTable(this.run.dynamo(), tables.aggregates);
      this.backup = { items, at: Date.now(), sent: this.run.planned.length };
    } finally {
      await runtime().resume(COMMAND_HANDLER);
    }
    this.run.say(`table restore: backed up ${this.backup.items.length} items of ${tables.aggregates}`);
  }

  /**
   * Replaces the aggregates table by the backup (deleted and restored under its name, the
   * command handler held meanwhile as the restore makes the table unavailable), then acts as
   * the operator: once the command handler refuses to decide on it, runs the rebuild.
   */
  async restoreTable(): Promise<void> {
    const { say, runtime, tables } = this.run;
    const backup = this.backup;
    if (backup === undefined) throw new Error('table restore: no backup was taken');
    // The copy must be older than the table: wait until a command sent after it has been decided.
    const { follower, planned } = this.run;
    const movedOn = await waitFor(
      async () => {
        await follower.poll().catch(() => undefined);
        return planned.slice(backup.sent).some((p) => !p.resent && follower.byCommand.has(p.command.commandId));
      },
      this.run.drainTimeoutMs,
      500,
    );
    if (!movedOn) throw new Error('table restore: no command was decided after the backup');
    await runtime().pause(COMMAND_HANDLER);
    const dynamo = this.run.dynamo();
    await dynamo.send(new DeleteTableCommand({ TableName: tables.aggregates }));
    await provision();
    await writeItems(dynamo, tables.aggregates, backup.items);
    say(
      `table restore: ${tables.aggregates} replaced by its copy of ${seconds(Date.now() - backup.at)} ago (${backup.items.length} items)`,
    );
    const refused = await this.refusalAfter(Date.now(), () => runtime().resume(COMMAND_HANDLER));
    const rebuilt = await this.rebuildHeads();
    this.run.count('table-restored');
    this.run.note(
      `table-restored: ${tables.aggregates} replaced by its copy of ${seconds(Date.now() - backup.at)} earlier; ` +
        `${refused ? 'the command handler refused it (TableBehindLogError)' : 'NO refusal seen in 30 s'}; rebuilt ${rebuilt.headsWritten} heads from ${rebuilt.eventsRead} events`,
    );
    if (!refused) this.run.skip('table restore: no TableBehindLogError observed before the rebuild (no batch arrived)');
  }

  /** Resumes with `resume`, then waits for the command handler to refuse a batch with TableBehindLogError. */
  private async refusalAfter(since: number, resume: () => Promise<void>): Promise<boolean> {
    await resume();
    return waitFor(
      () =>
        this.run.reports.some(
          (r) => r.at >= since && r.report.functionName === COMMAND_HANDLER && r.report.error?.startsWith('TableBehindLogError') === true,
        ),
      30_000,
    );
  }

  /** The snapshot rebuild of the aggregates table, holding the command handler through the runtime. */
  private async rebuildHeads(): Promise<RebuildReport> {
    const { topics, commandsGroup, runtime } = this.run;
    const commands = this.tables.log(topics.commands);
    try {
      return await rebuildAggregates({
        aggregates,
        heads: this.heads,
        eventLog: this.run.eventLog,
        publisher: this.run.rebuildPublisher,
        gate: { pause: () => runtime().pause(COMMAND_HANDLER), resume: () => runtime().resume(COMMAND_HANDLER) },
        commandsTrigger: { positions: () => this.tables.positions(topics.commands, commandsGroup) },
        // One generation: the rebuild reads no other for forwarded commands.
        commandLog: {
          bounds: (_topic, partition) => commands.bounds(partition),
          ends: () => Promise.resolve({}),
          sample: (_topic, ...rest) => commands.sample(...rest),
        },
        dedupeWindowMs: retentionMs(topologyTopics.commands.retention),
        // As the CLI's and npm start's rebuilds: the lives of the commands topic that only parked sequences name.
        parks: this.tables.park,
      });
    } finally {
      await commands.close();
    }
  }

  /** Loses every table (the run's emulator restarted, or its tables dropped), then rebuilds both once commands are refused. */
  async loseTables(): Promise<void> {
    const { say, runtime, tables, tableLoss, emulator } = this.run;
    say(`table loss (${tableLoss}): holding the command and event handlers`);
    await Promise.all([runtime().pause(COMMAND_HANDLER), runtime().pause(EVENT_HANDLER)]);
    if (tableLoss === 'restart-emulator' && emulator !== undefined) {
      await emulator.restart();
      this.run.renewDynamo();
      this.run.count('emulator-restart');
    } else {
      for (const table of Object.values(tables)) await this.run.dynamo().send(new DeleteTableCommand({ TableName: table }));
      this.run.count('table-loss');
    }
    await provision();
    const refused = await this.refusalAfter(Date.now(), () => runtime().resume(COMMAND_HANDLER));
    if (!refused) this.run.skip('table loss: no TableBehindLogError observed (no batch arrived before the rebuild)');
    const rebuilt = await this.rebuildHeads();
    // The read models and reaction checkpoints up to where the event trigger stands, as npm start rebuilds them; it goes on from there.
    const group = this.tables.group(this.run.topics.events, this.run.eventsGroup);
    const projected = await rebuildReadModels({
      aggregates,
      projections,
      reactions,
      readModels: this.tables.readModels,
      eventLog: this.run.eventLog,
      trigger: group,
      // As the operator's (compose/rebuild.ts): the event side's parks kept; under its policy `park` a failing event parks anew.
      parking: { store: this.tables.eventPark, attempts: eventFailurePolicy().policy === 'park' ? 1 : Infinity },
    }).finally(() => group.close());
    await runtime().resume(EVENT_HANDLER);
    say(
      `table loss: rebuilt ${rebuilt.headsWritten} heads from ${rebuilt.eventsRead} events and the read models from ${projected.eventsRead}; both handlers run again`,
    );
    this.run.note(
      `${tableLoss === 'restart-emulator' ? 'emulator-restart' : 'table-loss'}: every table lost; ${refused ? 'the command handler refused (TableBehindLogError)' : 'NO refusal seen'}; ` +
        `rebuilt ${rebuilt.headsWritten} heads from ${rebuilt.eventsRead} events and the read models (${projected.applied} applications) from ${projected.eventsRead}`,
    );
  }

  /**
   * Kills everything with SIGKILL, as a machine that loses power: the runtime process, the
   * broker (when it is this project's stack's and not spared) and the run's emulator (every
   * table lost). Then starts the emulator again, as npm start would start the stack's own,
   * and a new runtime process through npm start's startup path, which starts the broker,
   * provisions, and rebuilds whatever is behind the events topic before letting each side go on.
   */
  async hardKill(): Promise<void> {
    const { say, emulator, runtime } = this.run;
    const from = Date.now();
    const killed: string[] = [];
    const spared: string[] = [];
    const old = runtime();
    await old.kill();
    killed.push(`runtime ${old.pid}`);
    const brokerWhy = this.run.spareBroker ? 'the run leaves it alone' : await brokerNotOurs();
    if (brokerWhy === undefined) killed.push(`broker ${await killBroker()}`);
    else spared.push(`broker (${brokerWhy})`);
    if (emulator !== undefined) {
      const pid = emulator.pid();
      await emulator.kill();
      killed.push(`emulator ${pid ?? '?'}`);
    } else spared.push("emulator (AWS_ENDPOINT_URL_DYNAMODB is not the run's)");
    say(`hard kill: SIGKILL to ${killed.join(', ')}${spared.length > 0 ? `; spared ${spared.join(', ')}` : ''}`);
    if (emulator !== undefined) {
      await emulator.start();
      this.run.renewDynamo();
    }
    const next = await this.run.restartRuntime();
    const back = Date.now() - from;
    this.run.count('hard-kill');
    say(`hard kill: back in ${seconds(back)}; ${next.startup.join('; ')}`);
    this.run.note(
      `hard-kill: SIGKILL to ${killed.join(', ')}${spared.length > 0 ? ` (spared ${spared.join(', ')})` : ''}; ` +
        `back in ${seconds(back)} through npm start's startup path (runtime ${next.pid}): ${next.startup.join('; ') || 'nothing to rebuild'}`,
    );
  }
}
