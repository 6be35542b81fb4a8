package main

import (
	"context"
	"time"

	"github.com/hivecrew/hivecrew/core/client"
	"github.com/hivecrew/hivecrew/core/wire"
)

// cmdDevices: hivecrew devices pending|approve|deny|ls|rm — browsers
// paired with the helper by a code they show (the Swift app's web client,
// or anything built on its API).
func cmdDevices(e *env, args []string) error {
	return runTable(e, "devices", []command{
		{"pending", "", "list the devices asking to pair: their code, address, user agent and time", devicesPending},
		{"approve", "CODE", "approve the device showing CODE (only when it is the code it shows): it gets a session of its own",
			devicesAnswer((*client.Client).ApprovePairing, "Approved %s (code %s): it is signed in at its next check, within seconds. `hivecrew devices rm ID` revokes it.")},
		{"deny", "CODE", "refuse the device showing CODE", devicesAnswer((*client.Client).DenyPairing, "Refused %s (code %s).")},
		{"ls", "", "list the paired devices", devicesLs},
		{"rm", "ID", "revoke a paired device: its session ends at once", remover((*client.Client).RemoveDevice, "Revoked device %s: its session has ended.")},
	}, args)
}

func devicesPending(e *env, args []string) error {
	return ask(e, e.flags(), args, 0, func(c *client.Client, _ []string) (wire.PairingList, error) {
		ps, err := c.Pairings(e.ctx)
		return wire.PairingList{Pairings: nonNil(ps)}, err
	}, func(l wire.PairingList) error {
		now := time.Now()
		return printTable(e, l.Pairings, "No device asks to pair.",
			[]string{"CODE", "DEVICE", "ADDRESS", "ASKED", "EXPIRES", "USER AGENT"}, func(p wire.Pairing) []string {
				return []string{p.Code, p.DeviceName, p.Address, ago(p.CreatedAt, now), "in " + p.ExpiresAt.Sub(now).Round(time.Second).String(), oneLine(p.UserAgent)}
			})
	})
}

// devicesAnswer answers the pairing of the code given (answer is
// ApprovePairing or DenyPairing) and says so (done: the device's name and
// code).
func devicesAnswer(answer func(*client.Client, context.Context, string) (wire.Pairing, error), done string) func(*env, []string) error {
	return func(e *env, args []string) error {
		return ask(e, e.flags(), args, 1, func(c *client.Client, pos []string) (wire.Pairing, error) {
			return answer(c, e.ctx, pos[0])
		}, func(p wire.Pairing) error {
			e.out(done, p.DeviceName, p.Code)
			return nil
		})
	}
}

func devicesLs(e *env, args []string) error {
	return listing[wire.DeviceList, wire.Device]{
		get: func(c *client.Client, ctx context.Context) (wire.DeviceList, error) {
			ds, err := c.Devices(ctx)
			return wire.DeviceList{Devices: nonNil(ds)}, err
		},
		items:  func(l wire.DeviceList) []wire.Device { return l.Devices },
		none:   "No paired devices.",
		header: []string{"ID", "NAME", "ADDRESS", "PAIRED", "LAST SEEN", "USER AGENT"},
		cells: func(d wire.Device) []string {
			now := time.Now()
			return []string{d.ID, d.Name, d.Address, ago(d.AuthorizedAt, now), ago(d.LastSeenAt, now), oneLine(d.UserAgent)}
		},
	}.run(e, args)
}
