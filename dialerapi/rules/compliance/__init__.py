"""Who may be called, when, and how often (docs/compliance/).

compliance.phones         phone numbers read with phonenumbers: E.164, zones, country
compliance.places         where the customer is: region, postal code, area code
compliance.us_area_codes  US area codes by state (generated)
compliance.state_table    the shipped table of US state calling rules
compliance.calling_rules  the state rules enabled, emergencies (restrictions) and consent
compliance.claim_checks   the checks a claim applies: do-not-call and the calling window
compliance.do_not_call    the do-not-call list
compliance.contact_caps   contact caps per phone number
compliance.abandons       the abandon rate, per campaign

May import config, events, core and the plumbing; independent of campaigns.
"""
