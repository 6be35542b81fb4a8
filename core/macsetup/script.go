package macsetup

import "time"

// Marks that the kit's unattended.sh prints when it is done, or failed.
// The command that starts it does not contain them, so its echo on the
// screen is never taken for them.
const (
	DoneMark   = "HIVECREW-SETUP-" + "DONE"
	FailedMark = "HIVECREW-SETUP-" + "FAILED"
)

// Sequoia is the script for macOS 15's Setup Assistant and what follows
// it, in English with a US keyboard. It uses the variables user (the
// account's name, also its full name), password and kit (the kit's folder
// as the guest sees it). Each screen is recognised by its title before
// the keys are pressed; the keys are those of cirruslabs' macOS 15 boot
// commands (keyboard navigation: Shift-Tab reaches the Continue button of
// most screens). Screens some versions or Macs do not show are Optional.
//
// After Setup Assistant it opens Terminal with Spotlight and runs the
// kit's unattended.sh, which turns on automatic login and Remote Login,
// installs the guest agent (install-agent.sh) and prints DoneMark; then it
// allows the agent under Screen Recording and Accessibility in System
// Settings. The caller checks the result with the agent's health_check.
//
// None of this has run against real Setup Assistant screens: the phrases
// and keys are to be checked on a Mac (scripts/mac-smoke).
func Sequoia() []Step {
	continueBack := Keys("shift+tab", "space") // Continue, reached backwards
	return []Step{
		{Name: "Hello", Expect: []string{"hello", "hola", "bonjour", "hallo", "ciao", "Get Started"}, Wait: 10 * time.Minute,
			Do: []Action{Keys("space")}},
		// Typing "english" alone may pick "English (UK)": another language
		// first, then English, lands on the first English.
		{Name: "Language", Expect: []string{"English", "Italiano", "Deutsch", "Español"},
			Do: []Action{Type("italiano"), Keys("escape"), Type("english"), Keys("return")}},
		{Name: "Select Your Country or Region", Expect: []string{"Select Your Country or Region"},
			Do: []Action{Type("united states"), continueBack}},
		{Name: "Transfer Your Data to This Mac", Expect: []string{"Transfer Your Data to This Mac"}, Optional: true,
			Do: []Action{Keys("tab", "tab", "tab", "space", "tab", "tab", "space")}},
		{Name: "Written and Spoken Languages", Expect: []string{"Written and Spoken Languages"}, Do: []Action{continueBack}},
		{Name: "Accessibility", Expect: []string{"Accessibility"}, Do: []Action{continueBack}},
		{Name: "Data & Privacy", Expect: []string{"Data & Privacy"}, Do: []Action{continueBack}},
		{Name: "Migration Assistant", Expect: []string{"Transfer Information to This Mac", "Migration Assistant"}, Optional: true,
			Do: []Action{Keys("tab", "tab", "tab", "space")}},
		{Name: "Sign In with Your Apple Account", Expect: []string{"Sign In with Your Apple Account", "Sign In with Your Apple ID"},
			Do: []Action{Keys("shift+tab", "shift+tab", "space")}}, // Set Up Later
		{Name: "Skip signing in", Expect: []string{"Are you sure you want to skip"}, Do: []Action{Keys("tab", "space")}},
		{Name: "Terms and Conditions", Expect: []string{"Terms and Conditions"}, Do: []Action{continueBack}},
		{Name: "Agree to the license", Expect: []string{"I have read and agree"}, Do: []Action{Keys("tab", "space")}},
		// Full name, then (the account name follows it) password, verify,
		// and Continue.
		{Name: "Create a Mac Account", Expect: []string{"Create a Mac Account", "Create a Computer Account"},
			Do: []Action{Type("{{user}}"), Keys("tab", "tab"), Type("{{password}}"), Keys("tab"), Type("{{password}}"),
				Keys("tab", "tab", "tab", "space")}},
		{Name: "Enable Location Services", Expect: []string{"Enable Location Services"}, Wait: 5 * time.Minute, Do: []Action{continueBack}},
		{Name: "Without Location Services", Expect: []string{"don't want to use Location Services"}, Optional: true,
			Do: []Action{Keys("tab", "space")}},
		{Name: "Select Your Time Zone", Expect: []string{"Select Your Time Zone"},
			Do: []Action{Keys("tab"), Type("UTC"), Keys("return"), continueBack}},
		{Name: "Analytics", Expect: []string{"Analytics"}, Do: []Action{continueBack}},
		{Name: "Screen Time", Expect: []string{"Screen Time"}, Do: []Action{Keys("tab", "space")}},
		{Name: "Siri", Expect: []string{"Siri"}, Optional: true, Do: []Action{Keys("tab", "space"), continueBack}},
		{Name: "FileVault", Expect: []string{"FileVault"}, Optional: true, Do: []Action{Keys("shift+tab", "shift+tab", "space")}},
		{Name: "Without FileVault", Expect: []string{"Will Not Be Securely Encrypted"}, Optional: true, Do: []Action{Keys("tab", "space")}},
		{Name: "Choose Your Look", Expect: []string{"Choose Your Look"}, Do: []Action{continueBack}},
		{Name: "Update Mac Automatically", Expect: []string{"Update Mac Automatically"}, Optional: true, Do: []Action{Keys("tab", "tab", "space")}},
		{Name: "Welcome to Mac", Expect: []string{"Welcome to Mac"}, Optional: true, Do: []Action{Keys("space")}},
		// The desktop: the Finder's menu bar.
		{Name: "Desktop", Expect: []string{"Finder"}, Wait: 5 * time.Minute,
			Do: []Action{Pause(5 * time.Second), Keys("command+space"), Pause(2 * time.Second), Type("Terminal"), Pause(2 * time.Second), Keys("return")}},
		{Name: "Terminal", Expect: []string{"zsh", "Last login"},
			Do: []Action{Pause(2 * time.Second), Type(`sh "{{kit}}/unattended.sh"` + "\n")}},
		// Terminal reading the shared folder's volume may be asked about.
		{Name: "Terminal's access to the shared folder", Expect: []string{"access files on a network volume", "access files on a removable volume"},
			Optional: true, Do: []Action{Click("Allow")}},
		{Name: "unattended.sh", Expect: []string{DoneMark}, Fail: []string{FailedMark}, Wait: 15 * time.Minute,
			Do: []Action{Type(openPane("Privacy_ScreenCapture"))}},
		// The grants: the agent's switch in each Privacy & Security pane
		// turned on, the administrator's password given.
		{Name: "Screen Recording", Expect: []string{"Screen & System Audio Recording", "Screen Recording"},
			Do: []Action{Pause(2 * time.Second), ClickRowEnd("hivecrew-guestagent")}},
		passwordStep("Screen Recording"),
		{Name: "Screen Recording: quit and reopen", Expect: []string{"Quit & Reopen"}, Optional: true, Do: []Action{Click("Quit & Reopen")}},
		{Name: "Back to Terminal", Expect: []string{"hivecrew-guestagent"},
			Do: []Action{Keys("command+space"), Pause(2 * time.Second), Type("Terminal\n"), Pause(2 * time.Second), Type(openPane("Privacy_Accessibility"))}},
		{Name: "Accessibility", Expect: []string{"Allow the applications below to control your computer"},
			Do: []Action{Pause(2 * time.Second), ClickRowEnd("hivecrew-guestagent")}},
		passwordStep("Accessibility"),
		{Name: "Close System Settings", Expect: []string{"hivecrew-guestagent"}, Do: []Action{Pause(2 * time.Second), Keys("command+q")}},
	}
}

// openPane is the Terminal command that opens a Privacy & Security pane.
func openPane(anchor string) string {
	return `open "x-apple.systempreferences:com.apple.preference.security?` + anchor + `"` + "\n"
}

// passwordStep gives the administrator's password when System Settings
// asks for it to change a pane.
func passwordStep(name string) Step {
	return Step{Name: name + ": password", Expect: []string{"Enter your password to allow this", "is trying to modify"}, Optional: true,
		Do: []Action{Type("{{password}}\n"), Pause(2 * time.Second)}}
}
