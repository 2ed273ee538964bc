// The ES module entry point of `mqstate`: the same objects as the CommonJS one (index.js).
import cjs from './index.js'

export const {
  Client, Subscription, Pager, Lock, Election, Value, Change, HolderChange, LockStatus, ConnectionEvent,
  EditResult, DELETE, KEEP, MqstateError, StoreError, RpcError, ConnectError, AbortError, settings,
  errorCodes, storeErrorKinds, codec, hlc, topics, version
} = cjs
export default cjs
