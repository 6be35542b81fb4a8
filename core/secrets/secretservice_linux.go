package secrets

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	dbus "github.com/keybase/dbus"
	"github.com/keybase/go-keychain/secretservice"
)

// Secret Service names this file uses beyond what the secretservice package
// exports.
const (
	ssReadAlias      = "org.freedesktop.Secret.Service.ReadAlias"
	ssCollectionLock = "org.freedesktop.Secret.Collection.Locked"
	dbusPropertyGet  = "org.freedesktop.DBus.Properties.Get"
	ssCollectionIfc  = "org.freedesktop.Secret.Collection"
)

// Item attributes identifying the helper's secrets in the collection.
const (
	ssAttrService = "service"
	ssAttrAccount = "account"
	ssService     = "com.hivecrew.helper"
)

// secretService is a Store in the Secret Service's default collection: one
// item per ref, with attributes service=com.hivecrew.helper and account=ref.
//
// Secrets cross the session bus in "plain" sessions. The library's encrypted
// ("dh-ietf1024-sha256-aes128-cbc-pkcs7") sessions fail now and then against
// gnome-keyring 42 ("The secret was transferred or encrypted in an invalid
// way" on Set, undecryptable secrets on Get: 2 failures in about 1,200
// sessions when tried), as they would if the library derived its AES key from
// the shared secret with leading zero bytes dropped (big.Int.Bytes) where the
// service keeps them. The encryption guards against little here in any case:
// the bus is the user's own, and any process of the user may ask the service
// for the secrets of an unlocked collection.
//
// Only startup is bounded in time (see openSecretService); afterwards opening a
// session is bounded, and a prompt (an unlock dialog, if the collection was
// locked since) is waited for up to the library's 30 seconds, but the other
// calls are plain D-Bus calls without a deadline.
type secretService struct {
	collection dbus.ObjectPath

	// mu serializes every call to svc, whose prompt handling shares one
	// signal channel and is not safe for concurrent use.
	mu  sync.Mutex
	svc *secretservice.SecretService
}

var _ Store = (*secretService)(nil)

// probeSecretService checks, on a private connection bound to ctx, that the
// bus at address has a Secret Service with an unlocked default collection,
// and returns that collection's path. The connection is closed on return, or
// as soon as ctx ends, so a bus that stops answering cannot block the caller
// past ctx.
func probeSecretService(ctx context.Context, address string) (dbus.ObjectPath, error) {
	conn, err := dbus.Connect(address, dbus.WithContext(ctx))
	if err != nil {
		return "", fmt.Errorf("connect to session bus %s: %w", address, err)
	}
	defer conn.Close()
	svc := conn.Object(secretservice.SecretServiceInterface, secretservice.SecretServiceObjectPath)
	var collection dbus.ObjectPath
	if err := svc.CallWithContext(ctx, ssReadAlias, 0, "default").Store(&collection); err != nil {
		return "", fmt.Errorf("secret service: read default collection: %w", err)
	}
	if collection == "" || collection == "/" {
		return "", errors.New("secret service has no default collection")
	}
	var locked dbus.Variant
	err = conn.Object(secretservice.SecretServiceInterface, collection).
		CallWithContext(ctx, dbusPropertyGet, 0, ssCollectionIfc, "Locked").Store(&locked)
	if err != nil {
		return "", fmt.Errorf("secret service: is collection %s locked: %w", collection, err)
	}
	isLocked, ok := locked.Value().(bool)
	if !ok {
		return "", fmt.Errorf("secret service: %s of %s is %s, not a boolean", ssCollectionLock, collection, locked.Signature())
	}
	if isLocked {
		return "", fmt.Errorf("secret service: default collection %s is locked", collection)
	}
	return collection, nil
}

// openSecretService probes the bus at address, then connects the secretservice
// client to it and opens and closes one session to prove it works. It returns
// when that is done or ctx ends, whichever is first; in the second case the
// connecting goroutine finishes on its own (the probe has just shown the bus
// answers, and session opening is bounded by sessionTimeout) and what it
// opened is dropped. The library cannot close its connection, so one made for
// a store that is then dropped stays open until the process exits.
func openSecretService(ctx context.Context, address string, sessionTimeout time.Duration) (*secretService, error) {
	type result struct {
		s   *secretService
		err error
	}
	done := make(chan result, 1)
	go func() {
		s, err := dialSecretService(ctx, address, sessionTimeout)
		done <- result{s, err}
	}()
	select {
	case r := <-done:
		return r.s, r.err
	case <-ctx.Done():
		return nil, fmt.Errorf("secret service did not answer in time: %w", ctx.Err())
	}
}

// dialSecretService does openSecretService's work, synchronously.
func dialSecretService(ctx context.Context, address string, sessionTimeout time.Duration) (*secretService, error) {
	collection, err := probeSecretService(ctx, address)
	if err != nil {
		return nil, err
	}
	// NewService dials the same bus: sessionBusAddress mirrors how it finds
	// one, and the probe has just found it there.
	svc, err := secretservice.NewService()
	if err != nil {
		return nil, fmt.Errorf("secret service: %w", err)
	}
	svc.SetSessionOpenTimeout(sessionTimeout)
	s := &secretService{collection: collection, svc: svc}
	session, err := s.openSession()
	if err != nil {
		return nil, err
	}
	s.svc.CloseSession(session)
	return s, nil
}

// Kind returns KindSecretService.
func (s *secretService) Kind() string { return KindSecretService }

// Get returns the secret of the item for ref, unlocking it if the collection
// was locked since (which may show the desktop's unlock prompt).
func (s *secretService) Get(ref string) (string, error) {
	if err := checkRef(ref); err != nil {
		return "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	items, err := s.svc.SearchCollection(s.collection, ssAttributes(ref))
	if err != nil {
		return "", fmt.Errorf("secret service: get secret %q: %w", ref, err)
	}
	if len(items) == 0 {
		return "", notFound(ref)
	}
	if err := s.svc.Unlock(items[:1]); err != nil {
		return "", fmt.Errorf("secret service: get secret %q: %w", ref, err)
	}
	session, err := s.openSession()
	if err != nil {
		return "", err
	}
	defer s.svc.CloseSession(session)
	value, err := s.svc.GetSecret(items[0], *session)
	if err != nil {
		return "", fmt.Errorf("secret service: get secret %q: %w", ref, err)
	}
	if len(value) == 0 { // Set never stores one; someone else wrote the item
		return "", fmt.Errorf("secret service: get secret %q: the item's secret is empty", ref)
	}
	return string(value), nil
}

// Set creates, or replaces, the item for ref.
func (s *secretService) Set(ref, value string) error {
	if err := checkSet(ref, value); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	session, err := s.openSession()
	if err != nil {
		return err
	}
	defer s.svc.CloseSession(session)
	secret, err := session.NewSecret([]byte(value))
	if err != nil {
		return fmt.Errorf("secret service: set secret %q: %w", ref, err)
	}
	props := secretservice.NewSecretProperties("Hivecrew: "+ref, ssAttributes(ref))
	if _, err := s.svc.CreateItem(s.collection, props, secret, secretservice.ReplaceBehaviorReplace); err != nil {
		return fmt.Errorf("secret service: set secret %q: %w", ref, err)
	}
	return nil
}

// Delete removes every item for ref.
func (s *secretService) Delete(ref string) error {
	if err := checkRef(ref); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	items, err := s.svc.SearchCollection(s.collection, ssAttributes(ref))
	if err != nil {
		return fmt.Errorf("secret service: delete secret %q: %w", ref, err)
	}
	for _, item := range items {
		if err := s.svc.DeleteItem(item); err != nil {
			return fmt.Errorf("secret service: delete secret %q: %w", ref, err)
		}
	}
	return nil
}

// openSession opens a plain session (see secretService), bounded by the
// timeout given to openSecretService. The caller holds mu, or is
// dialSecretService.
func (s *secretService) openSession() (*secretservice.Session, error) {
	session, err := s.svc.OpenSession(secretservice.AuthenticationInsecurePlain)
	if err != nil {
		return nil, fmt.Errorf("secret service: open session: %w", err)
	}
	return session, nil
}

// ssAttributes are the attributes of ref's item.
func ssAttributes(ref string) map[string]string {
	return map[string]string{ssAttrService: ssService, ssAttrAccount: ref}
}
