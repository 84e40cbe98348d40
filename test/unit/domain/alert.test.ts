import { describe, expect, it } from 'vitest';
import { alert, type AlertEvent, type BalanceObservation } from '../../../functions/domain/alert/index.ts';
import { aggregates } from '../../../functions/domain/index.ts';
import { given, raw } from 'kafka-aggregates/testing';

const seen = (balance: number, sourceVersion: number): BalanceObservation => ({ balance, threshold: 1000, sourceVersion });
const raised = (balance: number, sourceVersion: number): AlertEvent => ({
  type: 'LowBalanceAlertRaised',
  data: seen(balance, sourceVersion),
});
const rearmed = (balance: number, sourceVersion: number): AlertEvent => ({
  type: 'LowBalanceAlertRearmed',
  data: seen(balance, sourceVersion),
});

describe('alert: RaiseLowBalanceAlert', () => {
  it('raises an alert when armed', () => {
    given(alert)
      .when({ type: 'RaiseLowBalanceAlert', data: seen(400, 3) })
      .then([raised(400, 3)]);
  });

  it('stays quiet while the balance stays below the threshold after an alert', () => {
    given(alert, raised(400, 3))
      .when({ type: 'RaiseLowBalanceAlert', data: seen(300, 4) })
      .then([]);
  });

  it('raises a new alert after a re-arm', () => {
    given(alert, raised(400, 3), rearmed(1500, 5))
      .when({ type: 'RaiseLowBalanceAlert', data: seen(200, 6) })
      .then([raised(200, 6)]);
  });

  it('ignores a redelivered raise from before the re-arm, so a late duplicate never raises a second alert', () => {
    given(alert, raised(400, 3), rearmed(1500, 5))
      .when({ type: 'RaiseLowBalanceAlert', data: seen(400, 3) })
      .then([]);
    given(alert, raised(400, 3), rearmed(1500, 5))
      .when({ type: 'RaiseLowBalanceAlert', data: seen(300, 4) })
      .then([]);
  });

  it('ignores a redelivered raise of the alert already raised', () => {
    given(alert, raised(400, 3))
      .when({ type: 'RaiseLowBalanceAlert', data: seen(400, 3) })
      .then([]);
  });
});

describe('alert: RearmLowBalanceAlert', () => {
  it('re-arms a raised alert', () => {
    given(alert, raised(400, 3))
      .when({ type: 'RearmLowBalanceAlert', data: seen(1500, 5) })
      .then([rearmed(1500, 5)]);
  });

  it('does nothing to an armed alert', () => {
    given(alert)
      .when({ type: 'RearmLowBalanceAlert', data: seen(1500, 5) })
      .then([]);
  });

  it('ignores a re-arm older than the alert it would cancel', () => {
    given(alert, raised(400, 7))
      .when({ type: 'RearmLowBalanceAlert', data: seen(1500, 5) })
      .then([]);
  });
});

describe('alert: command schemas', () => {
  it.each([
    ['a negative balance', { balance: -1, threshold: 1000, sourceVersion: 1 }],
    ['a zero threshold', { balance: 0, threshold: 0, sourceVersion: 1 }],
    ['a zero sourceVersion', { balance: 0, threshold: 1000, sourceVersion: 0 }],
    ['a fractional balance', { balance: 1.5, threshold: 1000, sourceVersion: 1 }],
    ['an unknown key', { balance: 0, threshold: 1000, sourceVersion: 1, note: 'x' }],
    ['a missing sourceVersion', { balance: 0, threshold: 1000 }],
  ])('refuses a raise with %s', (_label, data) => {
    given(alert).when(raw('RaiseLowBalanceAlert', data)).thenInvalid();
  });
});

describe('alert: evolve', () => {
  it('counts the alerts raised and remembers the last observation that changed the state', () => {
    const state = [raised(400, 3), rearmed(1500, 5), raised(10, 9)].reduce(alert.evolve, alert.initialState);
    expect(state).toStrictEqual({ status: 'raised', lastSourceVersion: 9, alertsRaised: 2 });
  });

  it('gives one alert per crossing for any order of redelivered observations', () => {
    // Observations of one account's history, each delivered up to three times, duplicates anywhere after the original.
    const history: [type: 'RaiseLowBalanceAlert' | 'RearmLowBalanceAlert', BalanceObservation][] = [
      ['RaiseLowBalanceAlert', seen(900, 3)],
      ['RaiseLowBalanceAlert', seen(500, 4)],
      ['RearmLowBalanceAlert', seen(2000, 6)],
      ['RaiseLowBalanceAlert', seen(100, 8)],
    ];
    let seed = 7;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    for (let run = 0; run < 200; run++) {
      const deliveries: (typeof history)[number][] = [...history];
      for (const observation of history) {
        const copies = Math.floor(random() * 3);
        for (let c = 0; c < copies; c++) {
          // Anywhere after the original, also after later observations (a late redelivery).
          const after = deliveries.indexOf(observation) + 1;
          deliveries.splice(after + Math.floor(random() * (deliveries.length - after + 1)), 0, observation);
        }
      }
      let state = alert.initialState;
      for (const [type, data] of deliveries) {
        const decision = alert.decide({ type, data }, state, { aggregateId: 'acc-1', version: 0, commandId: 'c', now: new Date(0) });
        if (!Array.isArray(decision)) throw new Error('no rejections expected');
        state = (decision as AlertEvent[]).reduce(alert.evolve, state);
      }
      expect(state.alertsRaised).toBe(2);
      expect(state.status).toBe('raised');
    }
  });
});

describe('domain registry', () => {
  it('registers alert next to account', () => {
    expect(aggregates.map((a) => a.type)).toEqual(expect.arrayContaining(['account', 'alert']));
  });
});
