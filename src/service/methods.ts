import type { MethodArgs, MethodName, MethodResult } from '../ipc/dbus/interface.js';
import { InvalidArgumentError, PermissionError } from '../platform/errors.js';
import type { PlatformIO } from '../platform/platform-io.js';
import { platformCatalogueEntries } from '../platform/sensors.js';
import { entryNamed } from '../platform/signal-catalogue.js';
import { describe, type SignalInfo } from '../platform/signal-info.js';
import type { AccessLists } from './access/index.js';
import type { AnswerMode } from './answer-mode.js';
import type { BatchRequestEntry } from './batch-port.js';
import type { Caller, CallerAccess } from './caller-access.js';
import type { CallContext } from './connection-watch.js';
import { NoSessionError } from './errors.js';
import { geopmText } from './geopm-texts.js';
import { checkAllowed, checkRequest, type UsageLog } from './requests.js';
import type { AllowedNames, SessionManager } from './session-manager.js';
import { shown } from './text.js';

/** The admin-only pseudo group that lists the names used since the daemon started. */
export const LOG_REQUEST_GROUP = '0.LOG_REQUEST';
/**
 * The group name GEOPM 3.1's PlatformGetGroupAccess checks CAP_SYS_ADMIN for. It is not the
 * name its log is kept under (LOG_REQUEST_GROUP), so GEOPM lets any user read the log; only a
 * request naming this one is refused to a non-admin. Both are mirrored in the `geopm` mode.
 */
const GEOPM_GUARDED_GROUP = '0.GEOPM_SERVICE_LOG_REQUEST';

/** Admin writes through the service are stored as given; see PlatformSetGroupAccess. */
const WRITE_AS_GIVEN = { force: true } as const;

/** One io.github.geopm method: typed arguments in, typed results out (from its signature). */
export type MethodHandler<M extends MethodName> = (
  caller: Caller,
  args: MethodArgs<M>,
  call?: CallContext,
) => Promise<MethodResult<M>>;

export type MethodTable = { [M in MethodName]: MethodHandler<M> };

export interface MethodDeps {
  pio: PlatformIO;
  access: AccessLists;
  callers: CallerAccess;
  sessions: SessionManager;
  usage: UsageLog;
  /** TopoGetCache's answer, computed once at start. */
  topoCache: string;
  /** GEOPM's answers (default) or error replies where GEOPM gives none (answer-mode.ts). */
  answers?: AnswerMode;
}

const toEntries = (config: [number, number, string][]): BatchRequestEntry[] =>
  config.map(([domain, idx, name]) => ({ name, domain, idx }));

/**
 * The method table: each io.github.geopm method as calls to the session manager, the access
 * lists and PlatformIO. State changes happen inside the session manager's lock; reads of
 * signals and metadata do not wait for it.
 */
export function methodTable({
  pio,
  access,
  callers,
  sessions,
  usage,
  topoCache,
  answers = 'geopm',
}: MethodDeps): MethodTable {
  const { catalog } = callers;
  const strict = answers === 'strict';
  const entryOf = platformCatalogueEntries(pio);
  /**
   * GEOPM's own text where it has one for the signal (geopm-texts.ts); else the description in
   * GEOPM's layout, with `feeds` naming the catalogue row of a signal whose name does not:
   * a client's `sensors` gives the signal the device type a direct reader does.
   */
  // Keyed by supported names only (callers check first): bounded by the node's signals, so a
  // call naming one signal a million times costs one lookup.
  const feedsOf = new Map<string, string | undefined>();
  const described = (name: string, info: SignalInfo): string => {
    const geopm = geopmText(name, info);
    if (geopm !== undefined) return geopm;
    if (!feedsOf.has(name)) {
      const row = entryOf(name)?.alias;
      feedsOf.set(name, row === entryNamed(name)?.alias ? undefined : row);
    }
    const feeds = feedsOf.get(name);
    return describe(feeds === undefined ? info : { ...info, feeds });
  };
  return {
    TopoGetCache: async () => [topoCache],

    PlatformGetGroupAccess: async (caller, [group]) => {
      if (group === GEOPM_GUARDED_GROUP || (strict && group === LOG_REQUEST_GROUP))
        callers.requireAdmin(caller, 'PlatformGetGroupAccess');
      if (group === LOG_REQUEST_GROUP) return [usage.lists()];
      const set = access.getGroupAccess(group, catalog);
      return [[set.signals, set.controls]];
    },
    // As in GEOPM the service stores what the admin gives (lists may be shared by nodes with
    // other hardware; unknown names are filtered when read). `joulegate access` validates names
    // client-side unless -F is given.
    PlatformSetGroupAccess: async (caller, [group, signals, controls]) => {
      callers.requireAdmin(caller, 'PlatformSetGroupAccess');
      access.setGroupAccess(group, signals, controls, catalog, WRITE_AS_GIVEN);
      return [];
    },
    PlatformSetGroupAccessSignals: async (caller, [group, signals]) => {
      callers.requireAdmin(caller, 'PlatformSetGroupAccessSignals');
      access.setGroupAccess(group, signals, undefined, catalog, WRITE_AS_GIVEN);
      return [];
    },
    PlatformSetGroupAccessControls: async (caller, [group, controls]) => {
      callers.requireAdmin(caller, 'PlatformSetGroupAccessControls');
      access.setGroupAccess(group, undefined, controls, catalog, WRITE_AS_GIVEN);
      return [];
    },
    PlatformGetUserAccess: async (caller) => {
      const set = await callers.listsOf(caller);
      return [[set.signals, set.controls]];
    },
    PlatformGetAllAccess: async () => {
      const set = access.getAllAccess(catalog);
      return [[set.signals, set.controls]];
    },
    PlatformGetSignalInfo: async (_caller, [names]) => [
      names.map((name) => {
        if (!pio.isValidSignal(name)) throw new InvalidArgumentError(`no support for signal ${shown(name)}`);
        const i = pio.signalInfo(name);
        return [name, described(name, i), i.domain, i.aggregation, i.format, i.behavior];
      }),
    ],
    PlatformGetControlInfo: async (_caller, [names]) => [
      names.map((name) => {
        if (!pio.isValidControl(name))
          throw new InvalidArgumentError(`no support for control ${shown(name)}`);
        const i = pio.controlInfo(name);
        return [name, describe(i), i.domain];
      }),
    ],

    PlatformLockControl: async (caller) => {
      callers.requireAdmin(caller, 'PlatformLockControl');
      await sessions.lockControls(caller);
      return [];
    },
    PlatformUnlockControl: async (caller) => {
      callers.requireAdmin(caller, 'PlatformUnlockControl');
      await sessions.unlockControls(caller);
      return [];
    },

    PlatformOpenSession: async (caller) => {
      await sessions.open(caller);
      return [];
    },
    PlatformCloseSession: async (caller) => {
      await sessions.close(caller);
      return [];
    },
    PlatformCloseSessionAdmin: async (caller, [pid]) => {
      await sessions.closeOf(pid, caller, (own) => {
        if (!own) callers.requireAdmin(caller, 'PlatformCloseSessionAdmin');
      });
      return [];
    },

    PlatformStartBatch: async (caller, [signalConfig, controlConfig], call) => {
      const signals = toEntries(signalConfig);
      const controls = toEntries(controlConfig);
      const watch = call?.watchConnection();
      const check = (allowed: AllowedNames) => {
        if (signals.length === 0 && controls.length === 0) {
          throw new InvalidArgumentError(
            'Requested a batch server, but no signals or controls were specified',
          );
        }
        const namesOf = (entries: BatchRequestEntry[]) => entries.map((e) => e.name);
        checkAllowed('signals', namesOf(signals), allowed.signals, caller.pid);
        checkAllowed('controls', namesOf(controls), allowed.controls, caller.pid);
        for (const s of signals) checkRequest(pio, 'signal', s.name, s.domain, s.idx);
        for (const c of controls) checkRequest(pio, 'control', c.name, c.domain, c.idx);
      };
      let handle: { serverPid: number; serverKey: string };
      try {
        handle = await sessions
          .startBatch(caller, signals, controls, check, watch?.gone)
          .finally(() => watch?.release());
      } catch (err) {
        // GEOPM answers a caller without a session with server pid -1 and an empty key.
        if (!strict && err instanceof NoSessionError) return [[-1, '']];
        throw err;
      }
      usage.addSignals(signals.map((s) => s.name));
      usage.addControls(controls.map((c) => c.name));
      return [[handle.serverPid, handle.serverKey]];
    },
    PlatformStopBatch: async (caller, [serverPid]) => {
      await sessions.stopBatch(caller, serverPid);
      return [];
    },

    // GEOPM answers NaN, not an error, to a caller without a session and for a name not in its
    // access list (which holds only names the node supports, so an unknown name too).
    PlatformReadSignal: async (caller, [name, domain, idx]) => {
      let allowed: AllowedNames;
      try {
        allowed = await sessions.allowedFor(caller, 'PlatformReadSignal');
      } catch (err) {
        if (!strict && err instanceof NoSessionError) return [Number.NaN];
        throw err;
      }
      if (!allowed.signals.has(name)) {
        if (!strict) return [Number.NaN];
        throw new PermissionError(`Signal ${shown(name)} is not in the access list of PID ${caller.pid}`);
      }
      const domainType = checkRequest(pio, 'signal', name, domain, idx);
      usage.addSignals([name]);
      return [await pio.readSignal(name, domainType, idx)];
    },
    PlatformWriteControl: async (caller, [name, domain, idx, setting]) => {
      const check = (allowed: AllowedNames) => {
        if (!allowed.controls.has(name)) {
          throw new PermissionError(`Control ${shown(name)} is not in the access list of PID ${caller.pid}`);
        }
        const domainType = checkRequest(pio, 'control', name, domain, idx);
        if (!Number.isFinite(setting)) {
          throw new InvalidArgumentError(`invalid setting ${setting} for control ${shown(name)}`);
        }
        return domainType;
      };
      await sessions.asWriter(caller, 'PlatformWriteControl', check, (domainType) => {
        usage.addControls([name]);
        return pio.writeControl(name, domainType, idx, setting);
      });
      return [];
    },
    PlatformRestoreControl: async (caller) => {
      await sessions.restoreSaved(caller);
      return [];
    },

    PlatformStartProfile: async (caller, [name]) => {
      await sessions.startProfile(caller, name);
      return [];
    },
    PlatformStopProfile: async (caller, [regions]) => {
      await sessions.stopProfile(caller, regions);
      return [];
    },
    PlatformGetProfilePids: async (caller, [name]) => {
      callers.requireAdmin(caller, 'PlatformGetProfilePids');
      return [await sessions.profilePids(name, caller)];
    },
    PlatformPopProfileRegionNames: async (caller, [name]) => {
      callers.requireAdmin(caller, 'PlatformPopProfileRegionNames');
      return [await sessions.popProfileRegions(name, caller)];
    },
  };
}
