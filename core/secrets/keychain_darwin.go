package secrets

import (
	"errors"
	"fmt"

	gokeychain "github.com/keybase/go-keychain"
)

// keychainService is the service of every generic password item the helper
// keeps; the item's account is the secret's ref.
const keychainService = "com.hivecrew.helper"

// keychain is a Store in the user's default (login) keychain: generic password
// items, accessible after the first unlock since boot, never synchronized to
// iCloud. The Security framework serializes access itself.
type keychain struct{}

var _ Store = keychain{}

// Kind returns KindKeychain.
func (keychain) Kind() string { return KindKeychain }

// Get returns the password of the item whose account is ref.
func (keychain) Get(ref string) (string, error) {
	if err := checkRef(ref); err != nil {
		return "", err
	}
	q := keychainQuery(ref)
	q.SetMatchLimit(gokeychain.MatchLimitOne)
	q.SetReturnData(true)
	results, err := gokeychain.QueryItem(q)
	if err != nil {
		return "", fmt.Errorf("keychain: get secret %q: %w", ref, err)
	}
	if len(results) == 0 {
		return "", notFound(ref)
	}
	return string(results[0].Data), nil
}

// Set updates the item whose account is ref, or adds it.
func (keychain) Set(ref, value string) error {
	if err := checkSet(ref, value); err != nil {
		return err
	}
	update := gokeychain.NewItem()
	update.SetData([]byte(value))
	err := gokeychain.UpdateItem(keychainQuery(ref), update)
	if errors.Is(err, gokeychain.ErrorItemNotFound) {
		item := keychainQuery(ref)
		item.SetLabel("Hivecrew: " + ref)
		item.SetData([]byte(value))
		item.SetAccessible(gokeychain.AccessibleAfterFirstUnlock)
		err = gokeychain.AddItem(item)
	}
	if err != nil {
		return fmt.Errorf("keychain: set secret %q: %w", ref, err)
	}
	return nil
}

// Delete removes the item whose account is ref, if any.
func (keychain) Delete(ref string) error {
	if err := checkRef(ref); err != nil {
		return err
	}
	err := gokeychain.DeleteItem(keychainQuery(ref))
	if err != nil && !errors.Is(err, gokeychain.ErrorItemNotFound) {
		return fmt.Errorf("keychain: delete secret %q: %w", ref, err)
	}
	return nil
}

// keychainQuery selects the helper's non-synchronizable generic password item
// for ref.
func keychainQuery(ref string) gokeychain.Item {
	q := gokeychain.NewItem()
	q.SetSecClass(gokeychain.SecClassGenericPassword)
	q.SetService(keychainService)
	q.SetAccount(ref)
	q.SetSynchronizable(gokeychain.SynchronizableNo)
	return q
}
