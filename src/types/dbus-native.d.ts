// The two pieces of @homebridge/dbus-native joulegate uses: the client SASL handshake and the
// type-signature parser. Message (un)marshalling is joulegate's own (src/service/dbus/wire.ts)
// because the library refuses NaN/Inf doubles and throws from its stream handler on bodies it
// cannot decode.
declare module '@homebridge/dbus-native/lib/handshake.js' {
  import type { Duplex } from 'node:stream';

  interface HandshakeOptions {
    authMethods?: string[];
  }
  export default function handshake(
    stream: Duplex,
    opts: HandshakeOptions,
    cb: (err: Error | null, guid?: string) => void,
  ): void;
}

declare module '@homebridge/dbus-native/lib/signature.js' {
  export interface SignatureNode {
    type: string;
    child: SignatureNode[];
  }
  export default function parseSignature(signature: string): SignatureNode[];
}
