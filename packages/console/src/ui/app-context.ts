import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import type { ResolvedConsoleConfig } from '../config.ts';
import type { ApiClient } from './api/client.ts';
import type { ItemFailedEvent, ItemLogEvent, Me } from './api/types.ts';
import type { ConfirmRequest } from './components/ConfirmDialog.tsx';
import type { ToastInput } from './components/Toasts.tsx';
import type { Emitter } from './state/emitter.ts';
import type { Route } from './state/route.ts';
import type { TaskStore } from './state/task-store.ts';

/** What every view of a signed-in console reaches through context. */
export interface AppServices {
  config: ResolvedConsoleConfig;
  me: Me;
  api: ApiClient;
  store: TaskStore;
  /** Item events of the task the stream follows (a detail view is open). */
  itemEvents: Emitter<ItemFailedEvent | ItemLogEvent>;
  /** The server could not replay what the stream missed: views reload what they show. */
  resync: Emitter<void>;
  toast(toast: ToastInput): void;
  /** Says something through the polite live region, without a toast. */
  announce(text: string): void;
  confirm(request: ConfirmRequest): Promise<boolean>;
  /** A confirmation that asks for a text (`request.prompt`); null when backed out. */
  ask(request: ConfirmRequest & { prompt: string }): Promise<string | null>;
  navigate(route: Route, options?: { replace?: boolean }): void;
}

export const AppContext = createContext<AppServices | null>(null);

export function useApp(): AppServices {
  const app = useContext(AppContext);
  if (!app) throw new Error('useApp() outside the signed-in console');
  return app;
}
