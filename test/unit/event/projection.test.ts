import { describe, expect, it } from 'vitest';
import { checkVersion } from '../../../functions/core/projection.ts';

describe('checkVersion: gap detection against the version applied', () => {
  it('calls the next version next, also for the first event of an aggregate', () => {
    expect(checkVersion(0, 1)).toEqual({ kind: 'next' });
    expect(checkVersion(4, 5)).toEqual({ kind: 'next' });
  });

  it('calls a version at or below the applied one a duplicate', () => {
    expect(checkVersion(4, 4)).toEqual({ kind: 'duplicate' });
    expect(checkVersion(4, 1)).toEqual({ kind: 'duplicate' });
  });

  it('calls a version further on a gap, naming the missing range', () => {
    expect(checkVersion(4, 6)).toEqual({ kind: 'gap', missingFrom: 5, missingTo: 5 });
    expect(checkVersion(0, 3)).toEqual({ kind: 'gap', missingFrom: 1, missingTo: 2 });
  });
});
