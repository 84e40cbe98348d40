/**
 * State of an `alert`: armed (the next fall below the threshold raises an alert) or raised
 * (an alert is out; further falls stay quiet until a rise re-arms it). Built by one object
 * literal per status, so its JSON does not depend on how it was reached.
 */
import type { AlertEvent } from './events.ts';

/** The alert state of one account. */
export interface AlertState {
  readonly status: 'armed' | 'raised';
  /** Account version of the last observation that changed the state (0 before any). */
  readonly lastSourceVersion: number;
  /** Alerts raised so far. */
  readonly alertsRaised: number;
}

/** State of an alert with no events: armed. */
export const initialAlertState: AlertState = { status: 'armed', lastSourceVersion: 0, alertsRaised: 0 };

/** Applies one event. */
export const evolveAlert = (state: AlertState, event: AlertEvent): AlertState => {
  switch (event.type) {
    case 'LowBalanceAlertRaised':
      return { status: 'raised', lastSourceVersion: event.data.sourceVersion, alertsRaised: state.alertsRaised + 1 };
    case 'LowBalanceAlertRearmed':
      return { status: 'armed', lastSourceVersion: event.data.sourceVersion, alertsRaised: state.alertsRaised };
    default: {
      const unhandled: never = event;
      return unhandled;
    }
  }
};
